"""Aligned slice planning: a K-way merge of the partitions by event time, one batch at a time.

Each batch admits from every partition only the records with log timestamp < T = G + max_drift,
found with the log's time index (Kafka offsetsForTimes: the first offset whose timestamp >= T).
A partition already past T reads nothing in that batch. With G the minimum over ACTIVE
partitions, the admitted event times of ACTIVE partitions stay within max_drift +
max_out_of_orderness of each other, and a batch holds at most the records below T (and at most
the row budget), however large the backlog: memory is bounded by the batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Protocol

from tidemark.record_count_slices import plan_record_count_slices


class LogTimeIndex(Protocol):
    """What the planner needs from the log: its time index, and one record's timestamp."""

    def offset_for_time(self, partition: int, timestamp_ms: int) -> int | None:
        """The first offset whose log timestamp >= ``timestamp_ms``; None if there is none."""

    def record_time(self, partition: int, offset: int) -> int | None:
        """The log timestamp of the record at ``offset`` (or the next one there is); None if none."""


@dataclass(frozen=True)
class Slice:
    end: int  # exclusive end offset of the partition's slice
    cut_at_target: bool  # the slice stops at the target: the next record's timestamp is >= T


def plan_aligned_slices(
    positions: Mapping[int, int],
    log_ends: Mapping[int, int],
    target_ms: int,
    index: LogTimeIndex,
    max_records: int | None = None,
) -> dict[int, Slice]:
    """Each partition's slice of records with log timestamp < ``target_ms``, within the budget.

    Ends never move backwards and never pass the log end. Where the row budget cuts a slice
    shorter than the target, ``cut_at_target`` is False: records below T may remain.

    The index answers "first offset >= T" from the log's start; after an out-of-order outlier
    (a far-future timestamp) it keeps pointing at the outlier although records below T follow.
    A partition whose index answer is at or before its position while its next record is below
    T is read by record count instead, within the budget, and never counted as cut at T.
    """
    target_ends = {}
    blocked = set()
    for partition, position in positions.items():
        log_end = log_ends.get(partition, position)
        if position >= log_end:
            target_ends[partition] = position
            continue
        offset = index.offset_for_time(partition, target_ms)
        if offset is not None and offset <= position:
            next_time = index.record_time(partition, position)
            if next_time is not None and next_time < target_ms:
                blocked.add(partition)
                target_ends[partition] = log_end
                continue
        target_ends[partition] = log_end if offset is None else min(max(offset, position), log_end)
    ends = plan_record_count_slices(positions, target_ends, max_records)
    return {
        partition: Slice(
            ends[partition],
            partition not in blocked and ends[partition] == target_ends[partition] < log_ends.get(partition, 0),
        )
        for partition in positions
    }
