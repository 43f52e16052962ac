"""Contiguity of the ledger's live ranges, and the holes left in a span of offsets."""

import pytest

from tidemark.offset_coverage import (
    LedgerRange,
    OffsetRange,
    merge_offsets_into_holes,
    range_breaks,
    uncovered_ranges,
)


def _ledger(table: str) -> list[LedgerRange]:
    """Rows of 'partition start end data_records mode' ('-' for unknown data_records)."""
    rows = []
    for line in table.strip().splitlines():
        partition, start, end, data, mode = line.split()
        rows.append(LedgerRange(int(partition), int(start), int(end), None if data == "-" else int(data), mode))
    return rows


def test_offset_range_is_start_inclusive_end_exclusive_and_never_empty():
    assert OffsetRange(3, 7).size == 4
    assert str(OffsetRange(3, 7)) == "[3, 7)"
    assert OffsetRange.from_json(OffsetRange(3, 7).to_json()) == OffsetRange(3, 7)
    assert sorted([OffsetRange(5, 6), OffsetRange(1, 9), OffsetRange(1, 2)]) == [
        OffsetRange(1, 2),
        OffsetRange(1, 9),
        OffsetRange(5, 6),
    ]
    with pytest.raises(ValueError, match="start must be before end"):
        OffsetRange(7, 7)
    with pytest.raises(ValueError, match="offsets are >= 0"):
        OffsetRange(-1, 7)


def test_contiguous_live_ranges_have_no_breaks_whatever_the_order_and_the_empty_batches():
    ledger = _ledger(
        """
        0  200  300  100  live
        1  0    50   50   live
        0  0    100  100  live
        0  300  300  0    live
        0  100  200  97   live
        1  50   50   0    live
        """
    )
    assert range_breaks(ledger) == []


def test_a_gap_and_an_overlap_per_partition():
    ledger = _ledger(
        """
        0  0    100  100  live
        0  120  200  80   live
        0  180  250  70   live
        1  0    40   40   live
        1  40   60   -    live
        1  75   75   0    live
        """
    )
    assert range_breaks(ledger) == [
        (0, OffsetRange(100, 120)),  # gap: nobody read 100..119
        (0, OffsetRange(180, 200)),  # overlap: 180..199 read twice (start, previous end)
        (1, OffsetRange(60, 75)),  # an empty batch at 75 says the position jumped from 60
    ]


def test_a_range_nested_in_an_earlier_one_is_an_overlap_of_its_own_extent_and_no_gap_after_it():
    ledger = _ledger(
        """
        2  0    300  300  live
        2  100  150  50   live
        2  300  400  100  live
        """
    )
    assert range_breaks(ledger) == [(2, OffsetRange(100, 150))]


def test_recovery_and_backfill_rows_neither_close_nor_open_a_gap():
    ledger = _ledger(
        """
        0  0    100  100  live
        0  100  120  20   recovery
        0  120  200  80   live
        0  0    500  500  backfill
        """
    )
    assert range_breaks(ledger) == [(0, OffsetRange(100, 120))]


def test_ledger_range_refuses_an_end_before_its_start():
    with pytest.raises(ValueError, match="partition 3 ends at 9 before its start 10"):
        LedgerRange(3, 10, 9, 0, "live")


def test_holes_between_offsets_present():
    assert merge_offsets_into_holes([10, 11, 12, 15, 16, 19], 10, 20) == [OffsetRange(13, 15), OffsetRange(17, 19)]
    assert merge_offsets_into_holes([], 5, 8) == [OffsetRange(5, 8)]
    assert merge_offsets_into_holes([5, 6, 7], 5, 8) == []
    # Duplicates and offsets outside the span do not matter.
    assert merge_offsets_into_holes([1, 4, 4, 6, 30], 3, 9) == [OffsetRange(3, 4), OffsetRange(5, 6), OffsetRange(7, 9)]
    assert merge_offsets_into_holes([1, 2], 4, 4) == []


def test_holes_refuse_unsorted_offsets_and_a_backwards_span():
    with pytest.raises(ValueError, match="sorted ascending; 3 follows 5"):
        merge_offsets_into_holes([1, 5, 3], 0, 10)
    with pytest.raises(ValueError, match=r"\[9, 2\) is not a span of offsets"):
        merge_offsets_into_holes([], 9, 2)


def test_uncovered_parts_of_a_span_with_unsorted_overlapping_cover():
    covered = [OffsetRange(50, 60), OffsetRange(0, 20), OffsetRange(15, 30), OffsetRange(55, 58), OffsetRange(90, 200)]
    assert uncovered_ranges(covered, 10, 100) == [OffsetRange(30, 50), OffsetRange(60, 90)]
    assert uncovered_ranges([], 10, 100) == [OffsetRange(10, 100)]
    assert uncovered_ranges([OffsetRange(0, 200)], 10, 100) == []
    assert uncovered_ranges([OffsetRange(0, 10), OffsetRange(100, 110)], 10, 100) == [OffsetRange(10, 100)]
    assert uncovered_ranges(covered, 40, 40) == []


def test_uncovered_agrees_with_holes_offset_by_offset():
    covered = [OffsetRange(3, 5), OffsetRange(8, 12), OffsetRange(4, 9), OffsetRange(20, 21)]
    present = sorted({offset for r in covered for offset in range(r.start, r.end)})
    assert (
        uncovered_ranges(covered, 0, 25)
        == merge_offsets_into_holes(present, 0, 25)
        == [OffsetRange(0, 3), OffsetRange(12, 20), OffsetRange(21, 25)]
    )
