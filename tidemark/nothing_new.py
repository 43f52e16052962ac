"""Whether a scheduled persist run has anything to do, decided without Spark.

A bounded (available_now) live run with nothing new plans no batch: the planner
(tidemark.batch_planner.BatchPlanner.plan) returns the state it was given when no position
moves, no partition's status changes and G stays. That happens exactly when every partition's
readable log end equals its position and no partition turns IDLE (or ACTIVE) by the clock; then
no record is read, no ledger row is written and no hour is sealed (sealing happens only in a
batch). This module makes that decision from the ledger's furthest live row per partition and
the log's bounds now, so a run with nothing to do ends in a second instead of starting a JVM.

It answers "nothing new" only when it is sure. Anything it cannot judge runs the job, whose
planner decides as always: a partition the ledger does not know (new, or never persisted),
offsets that left the log (the job names them and stops), an open transaction (the job tracks
it), a shard whose reader is behind, and an ACTIVE partition whose last record's time is not
known (Kinesis: it may turn IDLE now, which moves G and may seal hours).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tidemark.event_time_text import format_event_time, format_optional_event_time
from tidemark.partition_status import PartitionStatus, partition_status


@dataclass(frozen=True)
class LedgerPartition:
    """A partition as the live ledger's furthest row leaves it: ``position`` (the end of its last
    range) and its status after that range."""

    position: int
    status: PartitionStatus


@dataclass(frozen=True)
class LogPartitionNow:
    """A partition of the log now. ``earliest``: first retained position. ``end``: the readable end
    (Kafka: the last stable offset; Kinesis: past the position exactly when unread records
    exist). ``unsettled``: why ``end`` may not be the end a run would read to (a transaction
    open past it; a Kinesis probe that ended behind the shard's tip), None when it is. ``last_produced_ms``: its last record's log time
    (None: not known). ``finished``: a closed shard read to its end (Kinesis)."""

    earliest: int
    end: int
    unsettled: str | None = None
    last_produced_ms: int | None = None
    finished: bool = False


@dataclass(frozen=True)
class PersistLook:
    """The answer: ``nothing_new`` and the one sentence that says why (or what there is to do)."""

    nothing_new: bool
    reason: str


def look_for_work(
    ledger: Mapping[int, LedgerPartition],
    log: Mapping[int, LogPartitionNow],
    global_watermark_ms: int | None,
    idle_timeout_ms: int,
    now_ms: int,
    position_name: str = "offset",
) -> PersistLook:
    """Whether a live run over ``ledger`` would plan a batch against ``log`` at ``now_ms``.

    ``ledger``: {partition: its furthest live row}; empty when the ledger holds none.
    ``log``: {partition: bounds now} for every partition of the log. ``global_watermark_ms``:
    G as the ledger leaves it, for the sentence. ``position_name``: what a position is called
    (offset, sequence number). Never says "nothing new" when a batch could be planned.
    """
    if not ledger:
        return PersistLook(False, "the ledger holds no live row yet: the job starts the stream")
    unknown = sorted(set(log) - set(ledger))
    if unknown:
        return PersistLook(False, f"partitions {unknown} of the log are not in the ledger yet")
    gone = sorted(set(ledger) - set(log))
    gone = [p for p in gone if ledger[p].status != PartitionStatus.FINISHED]
    if gone:
        return PersistLook(False, f"partitions {gone} of the ledger are not in the log any more")
    for partition, row in sorted(ledger.items()):
        if row.status == PartitionStatus.FINISHED:
            continue
        bounds = log[partition]
        if bounds.earliest > row.position:
            return PersistLook(
                False, f"partition {partition}: {position_name}s before {bounds.earliest} left the log unread"
            )
        if bounds.end > row.position:
            return PersistLook(
                False,
                f"partition {partition}: the log ends at {bounds.end}, past the ledger's {position_name} {row.position}",
            )
        if bounds.unsettled:
            return PersistLook(False, f"partition {partition}: {bounds.unsettled}")
        if bounds.finished:
            return PersistLook(False, f"partition {partition}: closed and read to its end, not yet FINISHED")
        if row.status == PartitionStatus.ACTIVE:
            if bounds.last_produced_ms is None:
                return PersistLook(False, f"partition {partition} is ACTIVE and may turn IDLE now")
            status = partition_status(row.position, bounds.end, bounds.last_produced_ms, now_ms, idle_timeout_ms)
            if status != PartitionStatus.ACTIVE:
                return PersistLook(
                    False,
                    f"partition {partition} turns IDLE (its last record at {format_event_time(bounds.last_produced_ms)})",
                )
    statuses = sorted({row.status.value for row in ledger.values()})
    return PersistLook(
        True,
        f"the log ends equal the ledger's positions on all {len(ledger)} partitions ({', '.join(statuses)}), "
        f"G stays {format_optional_event_time(global_watermark_ms)}: nothing to read, nothing to seal",
    )
