"""Which offsets of a partition the ledger covers, and where it does not.

The ledger's live ranges of one partition must be contiguous: each range starts where the one
before it ended (end exclusive). A range that starts later leaves a gap nobody read; one that
starts earlier read offsets twice. Offsets are Kafka offsets: whole numbers >= 0, one per
position in the log, whether a data record sits there or not (transaction markers, aborted and
compacted offsets hold none).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import groupby

LIVE_MODE = "live"


@dataclass(frozen=True, order=True)
class OffsetRange:
    """The offsets [start, end) of one partition: start inclusive, end exclusive, start < end."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if self.start < 0:
            raise ValueError(f"offset range [{self.start}, {self.end}): offsets are >= 0")
        if self.start >= self.end:
            raise ValueError(f"offset range [{self.start}, {self.end}): start must be before end")

    @property
    def size(self) -> int:
        """How many offsets the range holds."""
        return self.end - self.start

    def to_json(self) -> dict:
        return {"start": self.start, "end": self.end}

    @classmethod
    def from_json(cls, data: dict) -> OffsetRange:
        return cls(data["start"], data["end"])

    def __str__(self) -> str:
        return f"[{self.start}, {self.end})"


@dataclass(frozen=True)
class LedgerRange:
    """One ledger row's range: [start, end) of ``partition``, read in ``mode`` (live, backfill,
    recovery). ``data_records`` is how many data records the range held (None in rows written
    before the ledger counted them). Empty batches write start == end."""

    partition: int
    start: int
    end: int
    data_records: int | None
    mode: str

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(
                f"ledger range of partition {self.partition} ends at {self.end} before its start {self.start}"
            )


def range_breaks(ranges: Sequence[LedgerRange]) -> list[tuple[int, OffsetRange]]:
    """Every break in the contiguity of the live ranges, per partition, as (partition, span).

    Per partition the live ranges are ordered by start, and each start is compared with the
    furthest end read so far (for ranges that do not nest, that is the previous range's end):

    - a gap: start > previous end returns ``OffsetRange(previous end, start)``, offsets nobody read;
    - an overlap: start < previous end returns ``OffsetRange(start, previous end)``, offsets read
      twice (for a range nested inside an earlier one, its own [start, end)).

    Callers tell the two apart by comparing with the ranges themselves; a gap is what recovery
    replays, an overlap is what the uniqueness check looks at. The offsets before a partition's
    first live range are not a break (that is the retention check's question). Backfill and
    recovery rows are ignored: they fill gaps, they do not define the live position. Breaks are
    listed by partition, then by start.
    """
    live = sorted((r for r in ranges if r.mode == LIVE_MODE), key=lambda r: (r.partition, r.start, r.end))
    breaks: list[tuple[int, OffsetRange]] = []
    for partition, partition_ranges in groupby(live, key=lambda r: r.partition):
        reach: int | None = None
        for ledger_range in partition_ranges:
            if reach is not None and ledger_range.start > reach:
                breaks.append((partition, OffsetRange(reach, ledger_range.start)))
            elif reach is not None and ledger_range.start < reach and ledger_range.start < ledger_range.end:
                breaks.append((partition, OffsetRange(ledger_range.start, min(reach, ledger_range.end))))
            reach = ledger_range.end if reach is None else max(reach, ledger_range.end)
    return breaks


def merge_offsets_into_holes(offsets_sorted: Sequence[int], start: int, end: int) -> list[OffsetRange]:
    """The offsets of [start, end) that are not in ``offsets_sorted``, as ranges in order.

    ``offsets_sorted`` must be in ascending order (duplicates and offsets outside [start, end)
    are fine); ValueError otherwise. Meant for small cases: it walks every offset given.
    """
    _check_bounds(start, end)
    holes: list[OffsetRange] = []
    expected = start
    previous: int | None = None
    for offset in offsets_sorted:
        if previous is not None and offset < previous:
            raise ValueError(f"offsets must be sorted ascending; {offset} follows {previous}")
        previous = offset
        if offset < expected or offset >= end:
            continue
        if offset > expected:
            holes.append(OffsetRange(expected, offset))
        expected = offset + 1
    if expected < end:
        holes.append(OffsetRange(expected, end))
    return holes


def merge_ranges(ranges: Iterable[OffsetRange]) -> list[OffsetRange]:
    """The offsets of ``ranges`` (any order, overlapping or adjacent) as sorted, disjoint,
    non-adjacent ranges."""
    merged: list[OffsetRange] = []
    for piece in sorted(ranges):
        if merged and piece.start <= merged[-1].end:
            if piece.end > merged[-1].end:
                merged[-1] = OffsetRange(merged[-1].start, piece.end)
        else:
            merged.append(piece)
    return merged


def uncovered_ranges(covered: Sequence[OffsetRange], start: int, end: int) -> list[OffsetRange]:
    """The parts of [start, end) that no range in ``covered`` holds, in order.

    ``covered`` may be unsorted, overlap, and reach outside [start, end).
    """
    _check_bounds(start, end)
    uncovered: list[OffsetRange] = []
    reach = start
    for piece in sorted(covered):
        if piece.end <= reach:
            continue
        if piece.start >= end:
            break
        if piece.start > reach:
            uncovered.append(OffsetRange(reach, piece.start))
        reach = piece.end
    if reach < end:
        uncovered.append(OffsetRange(reach, end))
    return uncovered


def _check_bounds(start: int, end: int) -> None:
    if start < 0 or end < start:
        raise ValueError(f"[{start}, {end}) is not a span of offsets: need 0 <= start <= end")
