"""Aligned slice planning: a K-way merge of the partitions by event time, one batch at a time.

Each batch admits from every partition only the records with log timestamp < T = G + max_drift,
found with the log's time index (Kafka offsetsForTimes: the first offset whose timestamp >= T).
A partition already past T reads nothing in that batch. With G the minimum over ACTIVE
partitions, the admitted event times of ACTIVE partitions stay within max_drift +
max_out_of_orderness of each other, and a batch holds at most the records below T (and at most
the row budget), however large the backlog: memory is bounded by the batch.

Offsets are not records. A transaction's commit or abort marker, the records of an aborted
transaction (read_committed) and offsets removed by log compaction hold an offset but no data
record. A position, a slice end or a time-index answer may fall on any of them. "The next
record" here always means the next *data* record, and a span that holds no data record is
stepped over: every partition still reaches its log end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, NamedTuple, Protocol

from tidemark.record_count_slices import plan_record_count_slices


class LoggedRecord(NamedTuple):
    """A data record's place in its partition: its offset and its log timestamp (ms, UTC)."""

    offset: int
    timestamp_ms: int


class LogTimeIndex(Protocol):
    """What the planner needs from the log: its time index, and where the data records are."""

    def offset_for_time(self, partition: int, timestamp_ms: int) -> int | None:
        """The first offset whose log timestamp >= ``timestamp_ms``; None if there is none.

        The answer may be an offset without a data record (Kafka: a transaction marker, whose
        timestamp is the wall clock of the commit, not an event time)."""

    def next_record(self, partition: int, offset: int) -> LoggedRecord | None:
        """The first data record at or after ``offset`` that a reader can read now (Kafka:
        below the last stable offset); None if there is none. Offsets without data are skipped."""

    def last_record_time(self, partition: int, end: int) -> int | None:
        """The log timestamp of the last data record before offset ``end``; None if none."""


@dataclass(frozen=True)
class Slice:
    end: int  # exclusive end offset of the partition's slice
    cut_at_target: bool  # the slice stops at the target: the next data record's timestamp is >= T


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
    (a far-future timestamp, or a transaction marker stamped with the wall clock in a log of
    older event times) it keeps pointing at the outlier although records below T follow.
    A partition whose index answer is at or before its position while its next record is below
    T is read by record count instead, within the budget, and never counted as cut at T. A
    partition with no data record left before its log end (only markers, aborted or compacted
    offsets) steps to its log end.

    A cut is only claimed where the index's offset holds a data record at or past T; a cut at
    a marker proves nothing about the records behind it (the caller checks that record).
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
            following = index.next_record(partition, position)
            if following is None or following.offset >= log_end:
                target_ends[partition] = log_end  # nothing but offsets without data: step over them
                continue
            if following.timestamp_ms < target_ms:
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
