"""A partition's status, derived from the source position alone (never from a timer firing).

ACTIVE while the partition has unread records, or produced records within idle_timeout; IDLE
only when it is caught up (read position = log end) and its last record is older than
idle_timeout. A partition with unread data is never IDLE: that is what makes the FLINK-29099
deadlock (an idle-marked source that never refreshed while it had data) impossible here.
Worst case: a partition becomes IDLE between idle_timeout and idle_timeout + one planning
interval after its last record; it is ACTIVE again at the first planning that sees new data.

FINISHED is a partition that can never produce again, read to its end: a closed Kinesis shard
(split or merged away) whose last record was read. It leaves G's minimum at once, without
waiting for idle_timeout, and never becomes ACTIVE again: its children carry its keys on.
"""

from __future__ import annotations

from enum import Enum


class PartitionStatus(str, Enum):
    ACTIVE = "ACTIVE"
    IDLE = "IDLE"
    FINISHED = "FINISHED"


def partition_status(
    position: int, log_end: int, last_produced_ms: int, now_ms: int, idle_timeout_ms: int
) -> PartitionStatus:
    """Status of a partition read up to ``position`` (next offset) whose log ends at ``log_end``.

    ``last_produced_ms`` is when it last produced: its last record's log timestamp (ms, UTC).
    """
    if position < log_end:
        return PartitionStatus.ACTIVE
    if now_ms - last_produced_ms >= idle_timeout_ms:
        return PartitionStatus.IDLE
    return PartitionStatus.ACTIVE
