"""From an event-time range to the offsets a backfill reads, and what retention already took.

The log's time index (Kafka offsetsForTimes) turns times into offsets: a partition's range is
[first offset stamped >= start, first offset stamped >= end), capped at the readable end. That
holds every retained record stamped within [start, end) except the rare one stamped earlier than
a record before it (out of order by more than the gap to ``end``); those belong to the next range.

Retention: a partition whose earliest retained offset is above its first offset has lost records.
When the range starts before the first retained record, the part of the range before it may
have been in the lost offsets. The lake knows where that part started (the live ledger's first
range that reached ``start``); without it the lost part is reported with an unknown first
offset. Never skipped silently: a backfill with a lost part does the rest and ends failed.
"""

from __future__ import annotations

from dataclasses import dataclass

from tidemark.backfill_request import BackfillRequest
from tidemark.event_time_text import format_event_time
from tidemark.offset_coverage import OffsetRange


@dataclass(frozen=True)
class PartitionTimeIndex:
    """What the log says about one partition, for one range [start, end).

    ``earliest``: earliest retained offset; ``end``: readable end (last stable offset);
    ``first_retained_ms``: log timestamp of the first retained data record (None: none retained);
    ``start_offset``/``end_offset``: the first offset stamped >= start / >= end (None: no such
    record yet).
    """

    earliest: int
    end: int
    first_retained_ms: int | None
    start_offset: int | None
    end_offset: int | None


@dataclass(frozen=True)
class LostPart:
    """Records of the range the log no longer holds: offsets [first_offset, earliest_retained)
    (``first_offset`` None: unknown, the lake never saw that part) with event times in
    [start_ms, end_ms)."""

    partition: int
    first_offset: int | None
    earliest_retained: int
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
    """The offsets to read per partition (only non-empty ranges) and the parts already lost."""

    ranges: dict[int, OffsetRange]
    lost: tuple[LostPart, ...]

    def offset_bounds(self) -> dict[int, tuple[int, int]]:
        return {p: (r.start, r.end) for p, r in sorted(self.ranges.items())}


class BeyondRetentionError(ValueError):
    """Nothing of the range is left in the log: it all fell out of retention."""


def plan_backfill(
    request: BackfillRequest, logs: dict[int, PartitionTimeIndex], ledger_first_offsets: dict[int, int] | None = None
) -> BackfillPlan:
    """The plan for ``request`` given each requested partition's ``logs``; ``ledger_first_offsets``
    ({partition: offset}) is where the live ledger says the range began in each partition.

    Raises BeyondRetentionError when the whole range lies before retention in every partition
    (a clear error before any work), naming the earliest time still in the log.
    """
    ledger_first_offsets = ledger_first_offsets or {}
    ranges: dict[int, OffsetRange] = {}
    lost: list[LostPart] = []
    for partition in request.partitions:
        index = logs[partition]
        start = index.end if index.start_offset is None else min(index.start_offset, index.end)
        end = index.end if index.end_offset is None else min(index.end_offset, index.end)
        if end > start:
            ranges[partition] = OffsetRange(start, end)
        part = _lost_part(request, partition, index, ledger_first_offsets.get(partition))
        if part is not None:
            lost.append(part)
    if lost and not ranges and len(lost) == len(request.partitions):
        firsts = [logs[p].first_retained_ms for p in request.partitions if logs[p].first_retained_ms is not None]
        since = (
            f"; the log holds records from {format_event_time(min(firsts))} on"
            if firsts
            else "; the log holds no records"
        )
        raise BeyondRetentionError(
            f"[{format_event_time(request.start_ms)}, {format_event_time(request.end_ms)}) is beyond the log's retention "
            f"in every requested partition{since}: nothing of it can be read"
        )
    return BackfillPlan(ranges, tuple(lost))


def _lost_part(
    request: BackfillRequest, partition: int, index: PartitionTimeIndex, ledger_first: int | None
) -> LostPart | None:
    if index.earliest == 0:
        return None  # nothing was ever deleted
    if index.first_retained_ms is not None and request.start_ms >= index.first_retained_ms:
        return None  # the range starts inside what is retained
    if ledger_first is not None and ledger_first >= index.earliest:
        return None  # the lake says the range's records start at or after the earliest retained offset
    lost_until = request.end_ms if index.first_retained_ms is None else min(request.end_ms, index.first_retained_ms)
    return LostPart(partition, ledger_first, index.earliest, request.start_ms, lost_until)
