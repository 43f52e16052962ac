"""What the jobs ask of a Kafka topic before they read it, answered from ListOffsets and the
topic's time index (the look-ups of tidemark.partitioned_log.PartitionedLog; the methods of
connectors.kafka_log.KafkaLog call these).

Kafka names every partition's bounds: the earliest retained offset, the last stable offset (the
readable end, below which every transaction is decided) and the high watermark. Offsets are
dense, so what is unread, lost or replayable is arithmetic on them; record times come from one
short read each, asked for all partitions at once.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from connectors.reachable import reachable
from tidemark.backfill_plan import PartitionTimeIndex
from tidemark.backfill_request import BackfillRequest, BackfillRequestError
from tidemark.nothing_new import LedgerPartition, LogPartitionNow
from tidemark.offset_coverage import OffsetRange
from tidemark.partition_status import PartitionStatus
from tidemark.partitioned_log import UnreadNow
from tidemark.recovery_plan import RecoveryPlan
from tidemark.recovery_request import RecoveryRequest, order_by_retention_deadline, split_by_retention
from tidemark.retention_loss import RetentionLossError


def bounds_now(kafka, positions: Mapping[int, int], finished: Collection[int], check_retention: bool) -> dict:
    """Every partition's connectors.kafka_log.LogBounds (ListOffsets): the positions are not
    needed, and what retention took is below ``earliest``."""
    return kafka.partition_bounds()


def look_before_run(kafka, ledger: Mapping[int, LedgerPartition]) -> dict[int, LogPartitionNow]:
    """Every partition's bounds; an open transaction leaves its end unsettled. Only an ACTIVE
    partition with nothing unread can change by the clock alone (turn IDLE): its last record's
    time decides it (one small read each; none when all are IDLE)."""
    bounds = kafka.partition_bounds()
    caught_up_active = {
        p: b.end
        for p, b in bounds.items()
        if p in ledger
        and ledger[p].status == PartitionStatus.ACTIVE
        and b.end == ledger[p].position
        and b.written_end == b.end
    }
    last_produced = kafka.last_record_times(caught_up_active) if caught_up_active else {}
    return {
        p: LogPartitionNow(
            b.earliest,
            b.end,
            unsettled=f"a transaction is open past offset {b.end}" if b.written_end > b.end else None,
            last_produced_ms=last_produced.get(p),
        )
        for p, b in bounds.items()
    }


def unread_now(kafka, positions: Mapping[int, int], finished: Collection[int]) -> UnreadNow:
    """The readable end of every partition; per lagging partition the log time of the record at
    its position (None: only offsets without data before the end); a note when those times could
    not be read (a position the log no longer retains)."""
    reachable(kafka.connection.bootstrap_servers)
    ends = {partition: bounds.end for partition, bounds in kafka.partition_bounds().items()}
    lagging = {p: position for p, position in positions.items() if ends.get(p, position) > position}
    if not lagging:
        return UnreadNow(ends, {})
    try:
        records = kafka.first_records(lagging)
    except (RetentionLossError, TimeoutError) as error:
        note = f"retention deadlines unknown: {error} (the quality run's retention check reports lost offsets)"
        return UnreadNow(ends, {}, (note,))
    return UnreadNow(ends, {p: None if r is None else r.timestamp_ms for p, r in records.items()})


def plan_recovery(kafka, request: RecoveryRequest) -> RecoveryPlan:
    """Offsets below the earliest retained offset are lost; nothing past the readable end exists
    yet (a recovery never waits for records). Ranges are ordered by their first record's time."""
    partition = request.partition
    bounds = kafka.bounds(partition)
    recoverable, lost = split_by_retention(request.ranges, bounds.earliest)
    recoverable = [OffsetRange(r.start, min(r.end, bounds.end)) for r in recoverable if r.start < bounds.end]

    def first_record_time(offsets: OffsetRange) -> int | None:
        following = kafka.next_record(partition, offsets.start)
        return None if following is None or following.offset >= offsets.end else following.timestamp_ms

    oldest_first = order_by_retention_deadline([(partition, r, first_record_time(r)) for r in recoverable])
    return RecoveryPlan(oldest_first, lost, {"earliest_retained_offset": bounds.earliest})


def backfill_indexes(kafka, request: BackfillRequest) -> dict[int, PartitionTimeIndex]:
    """offsetsForTimes at the window's start and end, and each partition's retained range. Each
    question is asked once for all the partitions (a backfill of 1,800 partitions plans in a
    handful of round trips, not thousands)."""
    missing = sorted(set(request.partitions) - set(kafka.partition_ids()))
    if missing:
        raise BackfillRequestError("partitions", f"topic {kafka.connection.topic!r} has no partition {missing[0]}")
    bounds = kafka.partition_bounds(request.partitions)
    firsts = kafka.next_records({p: b.earliest for p, b in bounds.items() if b.earliest > 0})
    at_start = kafka.offsets_for_time(request.partitions, request.start_ms)
    at_end = kafka.offsets_for_time(request.partitions, request.end_ms)
    return {
        partition: PartitionTimeIndex(
            bounds[partition].earliest,
            bounds[partition].end,
            firsts[partition].timestamp_ms if firsts.get(partition) else None,
            at_start[partition],
            at_end[partition],
        )
        for partition in request.partitions
    }
