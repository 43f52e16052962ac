"""The aging benchmark's plan (benchmarks/lake_aging.py): which days it measures, the runs its
schedules make in simulated time, and day N over day 1 with the goal's verdict. No Spark, no
broker: expectations are worked out by hand."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # benchmarks/ is scripts, not an installed package

from benchmarks.lake_aging import firings, measured_days, ratios, timeline  # noqa: E402

MINUTE_MS = 60_000
HOUR_MS = 3_600_000
DAY_MS = 86_400_000
MIDNIGHT = 1_795_046_400_000  # 2026-11-19T00:00:00Z


def test_day_1_the_middle_day_and_the_last_day_are_measured_once_each():
    assert measured_days(30) == [1, 15, 30]
    assert measured_days(31) == [1, 16, 31]
    assert measured_days(3) == [1, 2, 3]
    assert measured_days(2) == [1, 2]


def test_a_cron_fires_after_the_start_and_up_to_the_end_inclusive():
    assert firings("0 * * * *", MIDNIGHT, MIDNIGHT + 3 * HOUR_MS) == [
        MIDNIGHT + HOUR_MS,
        MIDNIGHT + 2 * HOUR_MS,
        MIDNIGHT + 3 * HOUR_MS,
    ]
    assert firings("15 0 * * *", MIDNIGHT, MIDNIGHT + 2 * DAY_MS) == [
        MIDNIGHT + 15 * MINUTE_MS,
        MIDNIGHT + DAY_MS + 15 * MINUTE_MS,
    ]


def test_two_days_make_49_hourly_persist_runs_and_a_maintenance_run_after_each_day():
    runs = timeline(MIDNIGHT, 2)
    persist = [t for t, kind in runs if kind == "persist"]
    maintenance = [t for t, kind in runs if kind == "maintenance"]
    assert persist == [MIDNIGHT + h * HOUR_MS for h in range(1, 50)]
    # 00:15 of the first day comes before any persist run: there is no lake to maintain yet.
    assert maintenance == [MIDNIGHT + DAY_MS + 15 * MINUTE_MS, MIDNIGHT + 2 * DAY_MS + 15 * MINUTE_MS]
    assert [t for t, _ in runs] == sorted(t for t, _ in runs)
    at_day_end = runs.index((MIDNIGHT + DAY_MS + 15 * MINUTE_MS, "maintenance"))
    assert runs[at_day_end - 1] == (MIDNIGHT + DAY_MS, "persist")
    assert runs[at_day_end + 1] == (MIDNIGHT + DAY_MS + HOUR_MS, "persist")


def test_the_last_run_is_the_first_persist_run_after_the_last_days_maintenance():
    every_three_hours = timeline(MIDNIGHT, 2, "0 */3 * * *")
    assert every_three_hours[-2:] == [
        (MIDNIGHT + 2 * DAY_MS + 15 * MINUTE_MS, "maintenance"),
        (MIDNIGHT + 2 * DAY_MS + 3 * HOUR_MS, "persist"),
    ]
    assert sum(kind == "persist" for _, kind in every_three_hours) == 17  # 03:00 of day 1 to 03:00 of day 3


def test_day_n_over_day_1_and_the_goal_for_the_bounded_runs_only():
    day_1 = {
        "read_one_sealed_hour_s": 0.5,
        "persist_look_s": 0.2,
        "idle_persist_run_s": 2.0,
        "quality_one_new_hour_s": 4.0,
        "quality_one_new_hour_after_gx_start_s": 1.0,
        "sweep_s": 10.0,
        "ledger_rows": 100,
        "persist_look_nothing_new": True,
        "simulated_now": "2026-11-19T00:15:00Z",
    }
    day_n = {**day_1, "read_one_sealed_hour_s": 0.55, "sweep_s": 70.0, "ledger_rows": 3000}
    figures = ratios(day_1, day_n)
    assert figures["read_one_sealed_hour_s"] == 1.1
    assert figures["sweep_s"] == 7.0  # the sweep reads the whole retained lake: no goal
    assert figures["ledger_rows"] == 30.0
    assert "persist_look_nothing_new" not in figures and "simulated_now" not in figures
    assert figures["goal"]["result"] == "PASS" and figures["goal"]["over"] == []

    slower = ratios(day_1, {**day_n, "idle_persist_run_s": 2.6})
    assert slower["idle_persist_run_s"] == 1.3
    assert slower["goal"]["result"] == "FAIL" and slower["goal"]["over"] == ["idle_persist_run_s"]

    # GX's start, the same every run, does not hide the growth of the rest of the quality run
    hidden = ratios(day_1, {**day_n, "quality_one_new_hour_s": 4.4, "quality_one_new_hour_after_gx_start_s": 1.4})
    assert hidden["quality_one_new_hour_s"] == 1.1
    assert hidden["goal"]["over"] == ["quality_one_new_hour_after_gx_start_s"]
