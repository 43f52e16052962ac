"""From a time range to the positions a backfill reads, and what retention already took.

The log's time index turns times into positions: a partition's range is [first position stamped
>= start, first position stamped >= end), capped at the readable end. Kafka's index is
offsetsForTimes over the records' timestamps. That holds every retained record stamped within
[start, end) except the rare one stamped earlier than a record before it (out of order by more
than the gap to ``end``); those belong to the next range.

Kinesis's index is AT_TIMESTAMP over the records' *arrival* times (ApproximateArrivalTimestamp,
set by Kinesis, rising with the sequence numbers in a shard): a Kinesis backfill's window is by
arrival, never by event time. Every shard the stream lists is asked, closed ones included, so a
window across a split or a merge reads the parent's part and the children's. Sequence numbers
are sparse: a range's end is the first record at or after ``end`` (or the shard's end), never
start + a count (``kinesis_shard_index``).

Retention: a partition whose earliest retained offset is above its first offset has lost records.
When the range starts before the first retained record, the part of the range before it may
have been in the lost offsets. The lake knows where that part started (the live ledger's first
range that reached ``start``); without it the lost part is reported with an unknown first
offset. Never skipped silently: a backfill with a lost part does the rest and ends failed.
"""

from __future__ import annotations

from dataclasses import dataclass

from tidemark.aligned_slices import LoggedRecord
from tidemark.backfill_request import BackfillRequest
from tidemark.event_time_text import format_event_time
from tidemark.offset_coverage import OffsetRange


@dataclass(frozen=True)
class PartitionTimeIndex:
    """What the log says about one partition, for one range [start, end).

    ``earliest``: earliest retained offset (0: nothing was ever deleted; None: nothing of the
    partition is retained, a Kinesis shard quiet for longer than its retention); ``end``: readable
    end (last stable offset);
    ``first_retained_ms``: log timestamp of the first retained data record (None: none retained);
    ``start_offset``/``end_offset``: the first offset stamped >= start / >= end (None: no such
    record yet).
    """

    earliest: int | None
    end: int
    first_retained_ms: int | None
    start_offset: int | None
    end_offset: int | None


@dataclass(frozen=True)
class LostPart:
    """Records of the range the log no longer holds: positions [first_offset, earliest_retained)
    (``first_offset`` None: unknown, the lake never saw that part; ``earliest_retained`` None:
    nothing of the partition is retained) with log times in [start_ms, end_ms)."""

    partition: int
    first_offset: int | None
    earliest_retained: int | None
    start_ms: int
    end_ms: int

    def to_json(self) -> dict:
        return {
            "partition": self.partition,
            "offsets": [self.first_offset, self.earliest_retained],
            "event_time": [format_event_time(self.start_ms), format_event_time(self.end_ms)],
        }


@dataclass(frozen=True)
class BackfillPlan:
    """The offsets to read per partition (only non-empty ranges), the parts already lost, and
    the partitions asked about (a request's, or every shard a Kinesis stream listed)."""

    ranges: dict[int, OffsetRange]
    lost: tuple[LostPart, ...]
    partitions: tuple[int, ...] = ()

    def offset_bounds(self) -> dict[int, tuple[int, int]]:
        return {p: (r.start, r.end) for p, r in sorted(self.ranges.items())}


class BeyondRetentionError(ValueError):
    """Nothing of the range is left in the log: it all fell out of retention."""


def plan_backfill(
    request: BackfillRequest, logs: dict[int, PartitionTimeIndex], ledger_first_offsets: dict[int, int] | None = None
) -> BackfillPlan:
    """The plan for ``request`` given each requested partition's ``logs`` (a request without
    partitions: every partition of ``logs``); ``ledger_first_offsets`` ({partition: offset}) is
    where the live ledger says the range began in each partition.

    Raises BeyondRetentionError when the whole range lies before retention in every partition
    (a clear error before any work), naming the earliest time still in the log.
    """
    ledger_first_offsets = ledger_first_offsets or {}
    partitions = request.partitions or tuple(sorted(logs))
    ranges: dict[int, OffsetRange] = {}
    lost: list[LostPart] = []
    for partition in partitions:
        index = logs[partition]
        start = index.end if index.start_offset is None else min(index.start_offset, index.end)
        end = index.end if index.end_offset is None else min(index.end_offset, index.end)
        if end > start:
            ranges[partition] = OffsetRange(start, end)
        part = _lost_part(request, partition, index, ledger_first_offsets.get(partition))
        if part is not None:
            lost.append(part)
    if lost and not ranges and len(lost) == len(partitions):
        firsts = [logs[p].first_retained_ms for p in partitions if logs[p].first_retained_ms is not None]
        since = (
            f"; the log holds records from {format_event_time(min(firsts))} on"
            if firsts
            else "; the log holds no records"
        )
        raise BeyondRetentionError(
            f"[{format_event_time(request.start_ms)}, {format_event_time(request.end_ms)}) is beyond the log's retention "
            f"in every requested partition{since}: nothing of it can be read"
        )
    return BackfillPlan(ranges, tuple(lost), partitions)


def _lost_part(
    request: BackfillRequest, partition: int, index: PartitionTimeIndex, ledger_first: int | None
) -> LostPart | None:
    if index.earliest == 0:
        return None  # nothing was ever deleted
    if index.first_retained_ms is not None and request.start_ms >= index.first_retained_ms:
        return None  # the range starts inside what is retained
    if ledger_first is not None and index.earliest is not None and ledger_first >= index.earliest:
        return None  # the lake says the range's records start at or after the earliest retained offset
    lost_until = request.end_ms if index.first_retained_ms is None else min(request.end_ms, index.first_retained_ms)
    return LostPart(partition, ledger_first, index.earliest, request.start_ms, lost_until)


def kinesis_shard_index(
    at_start: LoggedRecord | None,
    window_end: int | None,
    trim_horizon: LoggedRecord | None,
    retained_since_ms: int | None,
) -> PartitionTimeIndex:
    """One Kinesis shard's PartitionTimeIndex for a window [start, end) of arrival times.

    ``at_start``: AT_TIMESTAMP(start)'s first record (None: the shard holds no record that
    arrived at or after start). ``window_end``: the exclusive end of the shard's records that
    arrived before ``end``: the first record at or after ``end``, else a closed shard's ending
    sequence + 1, else the last record before ``end`` + 1 (an open shard read to its tip); None
    when ``at_start`` is None.

    ``retained_since_ms``: now − the stream's retention, when the stream is older than that (None:
    it is younger, nothing can have expired: ``earliest`` 0, Kafka's "never deleted"). Kinesis
    keeps every record younger than its retention, so what expired arrived before
    ``retained_since_ms`` and before the first retained record (``trim_horizon``; None: the shard
    retains none, it has been quiet for longer than the retention): the index's
    ``first_retained_ms`` is the earlier of the two, and a window after it lost nothing.
    """
    if retained_since_ms is None:
        earliest, first_retained_ms = 0, None
    elif trim_horizon is None:
        earliest, first_retained_ms = None, retained_since_ms
    else:
        earliest, first_retained_ms = trim_horizon.offset, min(trim_horizon.timestamp_ms, retained_since_ms)
    if at_start is None or window_end is None:
        return PartitionTimeIndex(earliest, 0, first_retained_ms, None, None)
    return PartitionTimeIndex(earliest, window_end, first_retained_ms, at_start.offset, window_end)
