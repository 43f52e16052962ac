"""What a log says a recovery request can replay.

Each log answers it its own way (tidemark.partitioned_log.PartitionedLog.plan_recovery): Kafka
from its earliest retained and readable-end offsets, Kinesis from a shard's trim horizon. The
recovery job replays ``oldest_first`` and reports ``lost``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tidemark.offset_coverage import OffsetRange


@dataclass(frozen=True)
class RecoveryPlan:
    """``oldest_first``: (partition, range, its oldest record's log time in ms or None) in the
    order their retention deadlines fall; ``lost``: the ranges already gone (retention);
    ``log_fields``: what the planning log line adds for this log (e.g. the earliest retained
    offset, or the shard's first retained sequence number)."""

    oldest_first: list[tuple[int, OffsetRange, int | None]]
    lost: list[OffsetRange]
    log_fields: dict = field(default_factory=dict)
