"""The global watermark live routed each offset range under, for the jobs that read it again.

A record's lateness depends on G when it is read: a record live met behind G − allowed_lateness
went to ``late``; a backfill reading the same offsets at full speed, aligned, would find it on
time. So a backfill or recovery does not decide again what live already decided: for offsets a
live ledger row covers, it routes under that row's G (the ledger's ``global_watermark``); only
offsets live never covered are routed under the replay's own G. That makes a backfill's tables
equal to live's, record for record, and keeps a record in the same table whichever job wrote it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class RoutedRange:
    """Offsets [start, end) of ``partition`` were routed under G = ``global_watermark_ms``."""

    partition: int
    start: int
    end: int
    global_watermark_ms: int


class LiveRouting:
    """Live's routed ranges of some partitions, looked up by offset range.

    Live ranges of one partition do not overlap (the ledger's live ranges are contiguous); a
    range repeated by a replayed batch carries the same G, so duplicates are harmless.
    """

    def __init__(self, ranges: Iterable[RoutedRange]):
        self._by_partition: dict[int, list[RoutedRange]] = {}
        for routed in sorted(set(ranges)):
            if routed.end > routed.start:
                self._by_partition.setdefault(routed.partition, []).append(routed)
        self._starts = {p: [r.start for r in rs] for p, rs in self._by_partition.items()}

    def ranges(self) -> tuple[RoutedRange, ...]:
        """Every routed range, by partition and offset."""
        return tuple(routed for partition in sorted(self._by_partition) for routed in self._by_partition[partition])

    def __len__(self) -> int:
        return sum(len(ranges) for ranges in self._by_partition.values())

    def global_watermark_at(self, partition: int, offset: int) -> int | None:
        """The G live routed the record at ``offset`` of ``partition`` under; None if live never
        covered that offset."""
        first = bisect_right(self._starts.get(partition, []), offset) - 1
        if first < 0:
            return None
        routed = self._by_partition[partition][first]
        return routed.global_watermark_ms if offset < routed.end else None

    def covering(self, partition: int, start: int, end: int) -> list[RoutedRange]:
        """The parts of [start, end) of ``partition`` live routed, clipped to it, in offset order."""
        ranges = self._by_partition.get(partition, [])
        first = max(0, bisect_right(self._starts.get(partition, []), start) - 1)
        parts = []
        for routed in ranges[first:]:
            if routed.start >= end:
                break
            if routed.end <= start:
                continue
            parts.append(
                RoutedRange(partition, max(start, routed.start), min(end, routed.end), routed.global_watermark_ms)
            )
        return parts
