"""What belongs to a sealed hour: the ledger ranges that carried its records.

An event-time hour [H, H + 1h) (UTC, aligned to the epoch) is in scope of a ledger range when
the range's records had event times in it: min_event_time < H + 1h and max_event_time >= H,
whatever the mode (live, backfill, recovery). Completeness, uniqueness and the quarantine count
of the hour look at exactly these ranges' offsets. Ranges that held no data record (only
transaction markers, aborted or compacted offsets) carry no hour.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from expectations.ledger_entries import HOUR_MS, LedgerEntry
from tidemark.event_time_text import format_event_time
from tidemark.offset_coverage import OffsetRange, merge_ranges


def require_hour_starts(hours_ms: list[int]) -> list[int]:
    """The hours sorted and de-duplicated; ValueError for one that is not the start of an hour."""
    for hour_ms in hours_ms:
        if hour_ms % HOUR_MS:
            raise ValueError(
                f"{format_event_time(hour_ms)} is not the start of an hour (UTC); hours are aligned to the epoch"
            )
    return sorted(set(hours_ms))


def hour_text(hour_ms: int) -> str:
    """1795309200000 → '2026-11-22T01:00:00Z'."""
    return format_event_time(hour_ms).replace(".000Z", "Z")


@dataclass(frozen=True)
class HourScope:
    """The ledger ranges that carried records of ``hour_ms``, per partition, ordered by start."""

    hour_ms: int
    ranges: dict[int, list[LedgerEntry]] = field(default_factory=dict)

    def spans(self, partition: int) -> list[OffsetRange]:
        """The offsets the hour's ranges of ``partition`` cover, merged into disjoint spans."""
        return merge_ranges(entry.offsets for entry in self.ranges.get(partition, []) if entry.offsets is not None)


def hour_scopes(entries: list[LedgerEntry], hours_ms: list[int]) -> list[HourScope]:
    scopes = []
    for hour_ms in hours_ms:
        ranges: dict[int, list[LedgerEntry]] = {}
        for entry in entries:
            if entry.data_records > 0 and entry.offsets is not None and entry.carries_hour(hour_ms):
                ranges.setdefault(entry.partition, []).append(entry)
        scopes.append(HourScope(hour_ms, ranges))
    return scopes
