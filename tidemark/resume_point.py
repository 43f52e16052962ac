"""Where a live job resumes when its checkpoint is gone: from the lake, not from the log's start.

Spark's checkpoint is a cache of what the lake already says. The ledger holds, per partition,
every range persisted and the event-time state after it, so a job that starts without a
checkpoint over tables that already hold the stream continues from there: each partition at the
end of its furthest live range, with the W_p and status that range left, and G the largest the
ledger or the seals table ever recorded (G never decreases, also across a lost checkpoint).
Without this, a new checkpoint starts at the earliest offsets and appends the whole log again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tidemark.partition_status import PartitionStatus
from tidemark.source_state import PartitionState, SourceState


@dataclass(frozen=True)
class LedgerPosition:
    """The furthest live ledger row of one partition (times in ms since the epoch, UTC)."""

    partition: int
    end_offset: int
    log_end: int
    partition_watermark_ms: int | None
    global_watermark_ms: int | None
    status: str
    slicing: str
    read_time_ms: int


def resume_state(
    positions: Sequence[LedgerPosition], sealed_global_watermark_ms: int | None, now_ms: int, last_step_id: int = -1
) -> SourceState | None:
    """The initial source state that continues the ledger, or None when it holds no live row.

    ``sealed_global_watermark_ms`` is the largest G in the seals table (rows of older ledgers
    carry no G). Partitions the ledger does not know are not in the state: the source registers
    them at their earliest offset, like partitions added to a topic. ``plan_seq`` is
    ``last_step_id``, the largest step id of the live ledger: the step ids go on where the
    ledger stopped, so a record's ``step_id`` is the same whether or not the checkpoint was lost
    (-1, as for any initial state, on a ledger without one). The watermarks are in the state
    itself: the planner finds no feedback of a batch in a new checkpoint, and needs none.
    """
    if not positions:
        return None
    known = [p.global_watermark_ms for p in positions if p.global_watermark_ms is not None]
    if sealed_global_watermark_ms is not None:
        known.append(sealed_global_watermark_ms)
    partitions = {
        p.partition: PartitionState(
            position=p.end_offset,
            log_end=max(p.log_end, p.end_offset),
            watermark_ms=p.partition_watermark_ms,
            status=PartitionStatus(p.status),
            # When the partition was last seen producing, at the latest: the read time of its last
            # range. The planner reads the real time from the log as soon as the log end moves.
            last_produced_ms=p.read_time_ms,
        )
        for p in positions
    }
    return SourceState(
        plan_seq=last_step_id,
        read_time_ms=now_ms,
        slicing=positions[0].slicing,
        global_watermark_ms=max(known) if known else None,
        target_ms=None,
        partitions=partitions,
    )
