"""The crash points' switch: refused outside tests, exact about where it fires."""

from __future__ import annotations

import pytest

from spark_jobs.crash_switch import CrashSwitch
from tidemark.crash_points import (
    CRASH_AT,
    TEST_FAULTS,
    CrashPoint,
    CrashPointError,
    CrashPointReached,
    crash_point_from_environment,
)


def _environment(value: str, gate: bool = True) -> dict[str, str]:
    return {CRASH_AT: value, **({TEST_FAULTS: "1"} if gate else {})}


def test_unset_is_no_crash_point():
    assert crash_point_from_environment({}) is None
    assert crash_point_from_environment({CRASH_AT: "  ", TEST_FAULTS: "1"}) is None


def test_a_crash_point_without_the_test_switch_is_refused_naming_both_variables():
    with pytest.raises(CrashPointError, match=f"{CRASH_AT} is set but {TEST_FAULTS} is not 1"):
        crash_point_from_environment(_environment('{"after": "events"}', gate=False))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('{"after": "lat"}', "'after' must be one of before_first, claims, events"),
        ('{"after": "events", "batch": -1}', "'batch' must be 0 or more"),
        ('{"after": "events", "action": "segfault"}', "'action' must be one of exit, raise"),
        ('{"after": "events", "batsh": 2}', "unknown field `batsh`"),
        ('{"batch": 2}', "missing required field `after`"),
        ("events:2", "is not JSON"),
    ],
)
def test_a_bad_crash_point_is_refused_naming_what_is_wrong(value, message):
    with pytest.raises(CrashPointError, match=message) as refused:
        crash_point_from_environment(_environment(value))
    assert str(refused.value).startswith(CRASH_AT)


def test_the_value_round_trips():
    point = CrashPoint("ledger", 3, "raise")
    assert crash_point_from_environment(_environment(point.to_json())) == point


def test_the_switch_fires_at_the_named_commit_of_the_named_batch_only():
    switch = CrashSwitch(CrashPoint("late", 1, "raise"))
    switch.batch_started()  # batch 0
    switch.committed("events")
    switch.committed("late")  # batch 0's late: not the point
    assert switch.armed_for_this_batch is None
    switch.batch_started()  # batch 1
    assert switch.armed_for_this_batch == "late"
    switch.committed("events")
    with pytest.raises(CrashPointReached, match="after late of batch 1"):
        switch.committed("late")


def test_before_first_fires_as_the_batch_starts_and_claims_on_the_run_s_claim():
    with pytest.raises(CrashPointReached):
        before = CrashSwitch(CrashPoint("before_first", 0, "raise"))
        before.batch_started()
    claims = CrashSwitch(CrashPoint("claims", 5, "raise"))
    with pytest.raises(CrashPointReached):
        claims.committed("claims", batch_level=False)  # before any batch: the batch number does not matter


def test_without_a_point_the_switch_never_fires():
    switch = CrashSwitch(None)
    for _ in range(3):
        switch.batch_started()
        for commit in ("events", "late", "quarantine", "seals", "ledger"):
            switch.committed(commit)
    assert switch.armed_for_this_batch is None
