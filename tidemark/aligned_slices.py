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

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple, Protocol

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


class BatchedLogTimeIndex(LogTimeIndex, Protocol):
    """A LogTimeIndex that also answers for several partitions in one question.

    The planner asks the same question of every partition of a step (one target T; the next
    record at every slice end), and against a broker each question is a round trip or a reader:
    asking once for all partitions is what keeps planning cheap. The answers must be exactly
    those of the one-partition methods. An index without these methods is asked partition by
    partition (``find_offsets_for_time``, ``find_next_records``).
    """

    def offsets_for_time(self, partitions: Iterable[int], timestamp_ms: int) -> dict[int, int | None]:
        """``offset_for_time(p, timestamp_ms)`` for each of ``partitions``, keyed by partition."""

    def next_records(self, offsets: Mapping[int, int]) -> dict[int, LoggedRecord | None]:
        """``next_record(p, offset)`` for each {partition: offset} of ``offsets``, keyed by partition."""

    def last_record_times(self, ends: Mapping[int, int]) -> dict[int, int | None]:
        """``last_record_time(p, end)`` for each {partition: end} of ``ends``, keyed by partition."""


def find_offsets_for_time(index: LogTimeIndex, partitions: Iterable[int], timestamp_ms: int) -> dict[int, int | None]:
    """Each partition's first offset whose log timestamp >= ``timestamp_ms`` (None: there is
    none), in one question when the index can answer several partitions at once. Asks nothing
    when there is no partition."""
    partitions = list(partitions)
    if not partitions:
        return {}
    batched = getattr(index, "offsets_for_time", None)
    if batched is not None:
        return batched(partitions, timestamp_ms)
    return {p: index.offset_for_time(p, timestamp_ms) for p in partitions}


def find_next_records(index: LogTimeIndex, offsets: Mapping[int, int]) -> dict[int, LoggedRecord | None]:
    """The first data record at or after each {partition: offset} (None: there is none yet), in
    one question when the index can answer several partitions at once. Asks nothing when
    ``offsets`` is empty."""
    return _each_partition_at_once(index, "next_records", offsets, index.next_record)


def find_last_record_times(index: LogTimeIndex, ends: Mapping[int, int]) -> dict[int, int | None]:
    """The log timestamp of the last data record before each {partition: end} (None: there is
    none), in one question when the index can answer several partitions at once. Asks nothing
    when ``ends`` is empty."""
    return _each_partition_at_once(index, "last_record_times", ends, index.last_record_time)


def _each_partition_at_once(index: LogTimeIndex, batched_name: str, by_partition: Mapping[int, int], ask_one):
    """``index.<batched_name>({partition: offset})`` when the index has it, else ``ask_one`` per
    partition: the same answers, one round trip or one per partition."""
    if not by_partition:
        return {}
    batched = getattr(index, batched_name, None)
    if batched is not None:
        return batched(dict(by_partition))
    return {p: ask_one(p, offset) for p, offset in by_partition.items()}


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

    The index is asked once per kind of question for all partitions (every partition with
    unread offsets: its first offset at T; every partition whose answer is at or before its
    position: its next record), not once per partition.
    """
    unread = [p for p, position in positions.items() if position < log_ends.get(p, position)]
    offsets = find_offsets_for_time(index, unread, target_ms)
    behind = {p: positions[p] for p, offset in offsets.items() if offset is not None and offset <= positions[p]}
    next_records = find_next_records(index, behind)
    target_ends = {}
    blocked = set()
    for partition, position in positions.items():
        log_end = log_ends.get(partition, position)
        if position >= log_end:
            target_ends[partition] = position
            continue
        offset = offsets[partition]
        if partition in behind:
            following = next_records[partition]
            if following is None or following.offset >= log_end:
                target_ends[partition] = log_end  # nothing but offsets without data: step over them
                continue
            if following.timestamp_ms < target_ms:
                blocked.add(partition)
                target_ends[partition] = log_end
                continue
        target_ends[partition] = log_end if offset is None else min(max(offset, position), log_end)
    ends = plan_record_count_slices(positions, target_ends, max_records, index)
    return {
        partition: Slice(
            ends[partition],
            partition not in blocked and ends[partition] == target_ends[partition] < log_ends.get(partition, 0),
        )
        for partition in positions
    }
