"""The crash points' switch: refused outside tests, exact about where it fires, and a pause that
holds the job until the test lets it go on."""

from __future__ import annotations

import threading
import time

import pytest

from spark_jobs.crash_switch import CrashSwitch
from tidemark.crash_points import (
    CRASH_AT,
    TEST_FAULTS,
    CrashPoint,
    CrashPointError,
    CrashPointReached,
    crash_points_from_environment,
    points_to_json,
)


def _environment(value: str, gate: bool = True) -> dict[str, str]:
    return {CRASH_AT: value, **({TEST_FAULTS: "1"} if gate else {})}


def test_unset_is_no_crash_point():
    assert crash_points_from_environment({}) == ()
    assert crash_points_from_environment({CRASH_AT: "  ", TEST_FAULTS: "1"}) == ()


def test_a_crash_point_without_the_test_switch_is_refused_naming_both_variables():
    with pytest.raises(CrashPointError, match=f"{CRASH_AT} is set but {TEST_FAULTS} is not 1"):
        crash_points_from_environment(_environment('{"after": "events"}', gate=False))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('{"after": "lat"}', "'after' must be one of before_first, decided, claims, events"),
        ('{"after": "events", "batch": -1}', "'batch' must be 0 or more"),
        ('{"after": "events", "action": "segfault"}', "'action' must be one of exit, raise, pause"),
        ('{"after": "events", "action": "pause"}', "'folder' is where a pause waits"),
        ('{"after": "events", "folder": "/tmp/x"}', "'folder' is where a pause waits"),
        ('{"after": "events", "batsh": 2}', "unknown field `batsh`"),
        ('{"batch": 2}', "missing required field `after`"),
        ('[{"after": "events"}, {"after": "lat"}]', r"'after' must be one of .* - at `\$\[1\]`"),
        ("events:2", "is not JSON"),
    ],
)
def test_a_bad_crash_point_is_refused_naming_what_is_wrong(value, message):
    with pytest.raises(CrashPointError, match=message) as refused:
        crash_points_from_environment(_environment(value))
    assert str(refused.value).startswith(CRASH_AT)


def test_one_point_or_a_list_round_trips():
    point = CrashPoint("ledger", 3, "raise")
    assert crash_points_from_environment(_environment(point.to_json())) == (point,)
    schedule = (CrashPoint("before_first", 1, "pause", "/tmp/p"), CrashPoint("decided", 3, "pause", "/tmp/p"))
    assert crash_points_from_environment(_environment(points_to_json(schedule))) == schedule


def test_the_switch_fires_at_the_named_commit_of_the_named_batch_only():
    switch = CrashSwitch((CrashPoint("late", 1, "raise"),))
    switch.batch_started()  # batch 0
    switch.committed("events")
    switch.committed("late")  # batch 0's late: not the point
    assert switch.armed_for_this_batch is None
    switch.batch_started()  # batch 1
    assert switch.armed_for_this_batch == "late"
    switch.committed("events")
    with pytest.raises(CrashPointReached, match="after late of batch 1"):
        switch.committed("late")


def test_before_first_fires_as_the_batch_starts_decided_once_it_decided_and_claims_on_the_run_s_claim():
    with pytest.raises(CrashPointReached):
        before = CrashSwitch((CrashPoint("before_first", 0, "raise"),))
        before.batch_started()
    decided = CrashSwitch((CrashPoint("decided", 0, "raise"),))
    decided.batch_started()  # before_first of batch 0: not the point
    with pytest.raises(CrashPointReached, match="after decided of batch 0"):
        decided.decided()
    claims = CrashSwitch((CrashPoint("claims", 5, "raise"),))
    with pytest.raises(CrashPointReached):
        claims.committed("claims", batch_level=False)  # before any batch: the batch number does not matter


def test_a_pause_holds_the_batch_until_the_resume_file_appears_and_each_point_pauses_once(tmp_path):
    first, second = (
        CrashPoint("before_first", 1, "pause", str(tmp_path)),
        CrashPoint("decided", 2, "pause", str(tmp_path)),
    )
    switch = CrashSwitch((first, second))
    reached = []

    def batches():
        for _ in range(3):
            switch.batch_started()
            reached.append(("started", switch._batch))
            switch.decided()
            reached.append(("decided", switch._batch))

    job = threading.Thread(target=batches)
    job.start()
    deadline = time.monotonic() + 10
    while not (tmp_path / "paused-before_first-1").exists():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(0.1)
    assert reached == [("started", 0), ("decided", 0)], "paused before batch 1 started its work"
    (tmp_path / "resume-before_first-1").touch()
    while not (tmp_path / "paused-decided-2").exists():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(0.1)
    assert reached[-1] == ("started", 2), "paused at batch 2's decision, after it started"
    (tmp_path / "resume-decided-2").touch()
    job.join(10)
    assert reached[-1] == ("decided", 2)


def test_without_a_point_the_switch_never_fires():
    switch = CrashSwitch(())
    for _ in range(3):
        switch.batch_started()
        switch.decided()
        for commit in ("events", "late", "quarantine", "seals", "ledger"):
            switch.committed(commit)
    assert switch.armed_for_this_batch is None
