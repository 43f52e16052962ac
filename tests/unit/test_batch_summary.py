"""What a persist batch reads from its range and summary rows (tidemark.batch_summary): its
planned ranges, its counts per step, partition and route, its event hours, and W_p after each
step. Rows as the source yields them (text), no Spark."""

from __future__ import annotations

from types import SimpleNamespace

from tidemark.batch_summary import (
    event_hours,
    partition_totals,
    read_batch_summary,
    route_totals,
    watermarks_after_steps,
)
from tidemark.partition_status import PartitionStatus
from tidemark.planned_range import RANGE_ROW, PlannedRange, StepRange
from tidemark.source_state import PartitionState
from tidemark.step_counts import SUMMARY_ROW, StepCounts

H = 3_600_000
DAY = 1_763_769_600_000  # 2025-11-22T00:00Z
BOUND = 5_000  # max_out_of_orderness_ms


def _range(partition: int, steps: tuple[StepRange, ...]) -> PlannedRange:
    state = PartitionState(steps[-1].end, 900, DAY, PartitionStatus.ACTIVE, DAY)
    return PlannedRange(
        partition,
        steps[0].start,
        steps[-1].seq,
        "event_time",
        DAY + 5 * H,
        DAY + 2 * H,
        DAY + H,
        DAY + 3 * H,
        state,
        steps,
    )


def _row(kind: str, text: str):
    """A range row carries its planned range, a summary row its step counts (the other is null)."""
    if kind == RANGE_ROW:
        return SimpleNamespace(row_kind=kind, planned_range=text, step_counts=None)
    return SimpleNamespace(row_kind=kind, planned_range=None, step_counts=text)


# Partition 0 read in steps 7 and 8; partition 1 only in step 8 (the batch's last, in every range).
P0 = _range(
    0,
    (
        StepRange(7, 100, 150, DAY + H, DAY + 2 * H, DAY, DAY + 2 * H),
        StepRange(8, 150, 170, DAY + 2 * H, DAY + 3 * H, None, None),
    ),
)
P1 = _range(1, (StepRange(8, 40, 60, DAY + 2 * H, DAY + 3 * H, DAY + H, None),))
COUNTS = (
    StepCounts(
        0,
        7,
        records=45,
        late=3,
        quarantined=2,
        data_records=50,
        min_event_time_ms=DAY + 10,
        max_event_time_ms=DAY + H + 30_000,
    ),
    StepCounts(
        0, 8, records=20, data_records=20, min_event_time_ms=DAY + H + 60_000, max_event_time_ms=DAY + 2 * H - 1_000
    ),
    StepCounts(
        1,
        8,
        records=15,
        late=1,
        data_records=18,
        quarantined=2,
        min_event_time_ms=DAY + 3 * H + 5,
        max_event_time_ms=DAY + 3 * H + 9,
    ),
)


def _rows():
    return [
        _row(RANGE_ROW, P0.to_text()),
        _row(RANGE_ROW, P1.to_text()),
        *(_row(SUMMARY_ROW, c.to_text()) for c in COUNTS),
    ]


def test_the_rows_give_the_planned_ranges_and_the_counts_of_each_partition_step():
    ranges, step_stats = read_batch_summary(_rows())
    assert ranges == {0: P0, 1: P1}
    assert sorted(step_stats) == [(0, 7), (0, 8), (1, 8)]
    assert step_stats[(1, 8)] == {
        "partition": 1,
        "seq": 8,
        "records": 15,
        "late": 1,
        "quarantined": 2,
        "data_records": 18,
        "min_event_time_ms": DAY + 3 * H + 5,
        "max_event_time_ms": DAY + 3 * H + 9,
    }


def test_a_replayed_task_s_counts_replace_the_first_ones_never_add_up():
    _, step_stats = read_batch_summary([*_rows(), _row(SUMMARY_ROW, COUNTS[2].to_text())])
    assert route_totals(step_stats) == {"records": 45 + 20 + 15, "late": 3 + 1, "quarantined": 2 + 2}


def test_totals_per_partition_and_the_event_hours_they_span():
    _, step_stats = read_batch_summary(_rows())
    totals = partition_totals(step_stats)
    assert totals == {
        0: {
            "records": 65,
            "late": 3,
            "quarantined": 2,
            "data_records": 70,
            "min_event_time_ms": DAY + 10,
            "max_event_time_ms": DAY + 2 * H - 1_000,
        },
        1: {
            "records": 15,
            "late": 1,
            "quarantined": 2,
            "data_records": 18,
            "min_event_time_ms": DAY + 3 * H + 5,
            "max_event_time_ms": DAY + 3 * H + 9,
        },
    }
    # Per partition from its first to its last event time: 0 spans hours 0 and 1, 1 spans hour 3;
    # hour 2, between them, holds none of the batch's records.
    assert event_hours(totals) == {DAY, DAY + H, DAY + 3 * H}


def test_w_p_after_each_step_rises_with_the_records_and_the_cut_and_never_falls():
    _, step_stats = read_batch_summary(_rows())
    # Step 7: the cut at T = DAY + 2h promises more than its records' max (DAY + 1h + 30 s):
    # W_p = T - bound - 1. Step 8 starts without a W_p of its own and its records' max,
    # DAY + 2h - 1 s, gives less than step 7 reached: W_p stays.
    assert watermarks_after_steps(P0, step_stats, BOUND) == [DAY + 2 * H - BOUND - 1, DAY + 2 * H - BOUND - 1]
    # Partition 1: W_p before = DAY + 1h, raised by its max event time DAY + 3h + 9 ms.
    assert watermarks_after_steps(P1, step_stats, BOUND) == [DAY + 3 * H + 9 - BOUND - 1]


def test_a_step_without_records_or_cut_keeps_w_p_before_it():
    planned = _range(2, (StepRange(9, 10, 10, DAY, DAY + H, DAY - 7, None),))
    assert watermarks_after_steps(planned, {}, BOUND) == [DAY - 7]
