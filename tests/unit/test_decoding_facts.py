"""expectations.decoding's facts: which of a partition's newest live rows read records, and
which of those held one decodable record (a row with records and no event time held none)."""

from __future__ import annotations

from expectations.decoding import DecodingFacts, facts
from expectations.ledger_entries import LedgerEntry


def _row(step: int, partition: int, records: int, event_ms: int | None, mode: str = "live") -> LedgerEntry:
    start = step * 10
    return LedgerEntry(
        step, partition, mode, start, start + records, start + records, records, event_ms, event_ms, None, None, step
    )


def test_only_the_newest_window_of_live_rows_with_records_counts():
    entries = [
        _row(1, 0, 50, 1_000),  # decodable, but older than the window of 3
        _row(2, 0, 40, None),
        _row(3, 0, 0, None),  # an empty batch: no records, no say
        _row(4, 0, 30, None),
        _row(5, 0, 20, None, mode="recovery"),  # not live
        _row(1, 1, 10, None),
        _row(2, 1, 10, 2_000),
    ]
    assert facts(entries, [0, 1, 2], window=3) == [
        DecodingFacts(0, rows=2, records=70, decodable_rows=0),
        DecodingFacts(1, rows=2, records=20, decodable_rows=1),
    ]
    # A longer window reaches the decodable row.
    assert facts(entries, [0], window=5) == [DecodingFacts(0, rows=3, records=120, decodable_rows=1)]
