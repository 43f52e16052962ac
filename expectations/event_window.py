"""The event times the persisted records of some log ranges can have, from the ledger alone.

Every writer of events (live, backfill, recovery, re-drive) writes a ledger row for the range it
read, with the smallest and largest event time of the valid records in it. So a record at a
position inside ``bounds`` that lies in events has its event time inside the union of those
rows' [min, max], over every row whose range meets ``bounds``. A reader of events by position
may skip every file whose event times lie outside it: the events table is partitioned by event
hour, and its position statistics alone keep every compacted hour (a compacted file holds all
partitions, so its positions span the slowest partition's to the fastest's).

Times are ms since the epoch, UTC. No window (None) when a meeting row has no event times (a
row written before the ledger kept them, or a range of quarantined records only).
"""

from __future__ import annotations

from dataclasses import dataclass

from expectations.ledger_entries import LedgerEntry
from tidemark.offset_coverage import OffsetRange


@dataclass(frozen=True)
class EventWindow:
    """Event times from ``first_ms`` to ``last_ms``, both included."""

    first_ms: int
    last_ms: int


def event_window(entries: list[LedgerEntry], bounds: dict[int, OffsetRange]) -> EventWindow | None:
    """The window of the records at positions in ``bounds`` (per partition), or None when the
    ledger cannot bound it. Rows without valid records (none read, all quarantined) carry no
    event time and none of their records is in events; a row that read valid records and kept
    no times (an old lake's) leaves the window unbounded."""
    first, last = None, None
    for entry in entries:
        span = bounds.get(entry.partition)
        if span is None or entry.offsets is None or entry.end <= span.start or entry.start >= span.end:
            continue
        if entry.min_event_ms is None or entry.max_event_ms is None:
            if entry.data_records:
                return None
            continue
        first = entry.min_event_ms if first is None else min(first, entry.min_event_ms)
        last = entry.max_event_ms if last is None else max(last, entry.max_event_ms)
    return None if first is None else EventWindow(first, last)
