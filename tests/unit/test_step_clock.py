"""tidemark_cli.step_clock: the demo's "where the time went" lines."""

from __future__ import annotations

from tidemark_cli.step_clock import StepClock


def test_each_step_lasts_until_the_next_one_starts_and_the_running_one_counts_too():
    now = iter([0.0, 1.0, 4.5, 10.0, 12.0])
    clock = StepClock(clock=lambda: next(now))
    clock.step("jars")  # 1.0
    clock.step("Airflow start")  # 4.5
    clock.step("persist DAG run")  # 10.0
    assert clock.lines() == [
        "  jars                3.5 s",
        "  Airflow start       5.5 s",
        "  persist DAG run     2.0 s",
        "  total              12.0 s",
    ]
