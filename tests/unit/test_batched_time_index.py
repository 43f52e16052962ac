"""The planner asks its time index for all partitions of a step at once (BatchedLogTimeIndex),
and gets the same plans as when it asks partition by partition.

``CountingLog`` is the in-memory log with the batched questions added; every question it is
asked is recorded as (kind, partition, argument), so a run against it can be compared with a run
against the plain FakeLog, which only answers one partition at a time.
"""

from __future__ import annotations

from collections import Counter

from test_batch_planner import HOUR, START, _initial, planner, skewed_backlog
from test_packed_steps import catch_up_packed
from test_planner_offsets_without_data import transactional_backlog

from harness.fake_log import FakeLog, ManualClock
from tidemark.aligned_slices import (
    LoggedRecord,
    find_last_record_times,
    find_next_records,
    find_offsets_for_time,
    plan_aligned_slices,
)


class RecordingLog(FakeLog):
    """FakeLog answering one partition at a time, recording the questions."""

    def __init__(self, source: FakeLog):
        super().__init__(source.timestamps, source.without_data)
        self.questions: Counter = Counter()
        self.calls: Counter = Counter()

    def offset_for_time(self, partition, timestamp_ms):
        self.calls["offset_for_time"] += 1
        self.questions[("offset_for_time", partition, timestamp_ms)] += 1
        return super().offset_for_time(partition, timestamp_ms)

    def next_record(self, partition, offset):
        self.calls["next_record"] += 1
        self.questions[("next_record", partition, offset)] += 1
        return super().next_record(partition, offset)

    def last_record_time(self, partition, end):
        self.calls["last_record_time"] += 1
        self.questions[("last_record_time", partition, end)] += 1
        return super().last_record_time(partition, end)


class CountingLog(RecordingLog):
    """The same log, also answering several partitions in one question."""

    def offsets_for_time(self, partitions, timestamp_ms):
        self.calls["offsets_for_time"] += 1
        partitions = list(partitions)
        for p in partitions:
            self.questions[("offset_for_time", p, timestamp_ms)] += 1
        return {p: FakeLog.offset_for_time(self, p, timestamp_ms) for p in partitions}

    def next_records(self, offsets):
        self.calls["next_records"] += 1
        for p, offset in offsets.items():
            self.questions[("next_record", p, offset)] += 1
        return {p: FakeLog.next_record(self, p, offset) for p, offset in offsets.items()}

    def last_record_times(self, ends):
        self.calls["last_record_times"] += 1
        for p, end in ends.items():
            self.questions[("last_record_time", p, end)] += 1
        return {p: FakeLog.last_record_time(self, p, end) for p, end in ends.items()}


def _three_partitions() -> FakeLog:
    log = FakeLog()
    log.append(0, START, START + 1_000, START + 2 * HOUR)
    log.append(1, START + 500, START + 90 * 60_000)
    log.append_without_data(2, START + 10 * HOUR)  # a commit marker stamped with the wall clock
    log.append(2, START + 100)
    return log


def test_without_batched_methods_the_questions_are_asked_partition_by_partition():
    log = RecordingLog(_three_partitions())
    assert find_offsets_for_time(log, [0, 1, 2], START + HOUR) == {0: 2, 1: 1, 2: 0}
    assert find_next_records(log, {0: 1, 2: 0}) == {0: LoggedRecord(1, START + 1_000), 2: LoggedRecord(1, START + 100)}
    assert log.calls == Counter(offset_for_time=3, next_record=2)


def test_with_batched_methods_each_kind_of_question_is_asked_once():
    log = CountingLog(_three_partitions())
    assert find_offsets_for_time(log, [0, 1, 2], START + HOUR) == {0: 2, 1: 1, 2: 0}
    assert find_next_records(log, {0: 1, 2: 0}) == {0: LoggedRecord(1, START + 1_000), 2: LoggedRecord(1, START + 100)}
    assert log.calls == Counter(offsets_for_time=1, next_records=1)


def test_last_record_times_are_asked_once_for_all_partitions_and_step_back_over_markers():
    plain, batched = RecordingLog(_three_partitions()), CountingLog(_three_partitions())
    ends = {0: 3, 1: 2, 2: 1}
    expected = {0: START + 2 * HOUR, 1: START + 90 * 60_000, 2: None}  # partition 2: only a marker before 1
    assert find_last_record_times(plain, ends) == find_last_record_times(batched, ends) == expected
    assert plain.calls == Counter(last_record_time=3)
    assert batched.calls == Counter(last_record_times=1)


def test_a_planner_asks_when_partitions_last_produced_once_per_step_not_once_per_partition():
    clock = ManualClock(START + 3 * HOUR)
    plan = planner(clock)
    log = CountingLog(_three_partitions())
    state = plan.initial({0: 0, 1: 0, 2: 0}, log.log_ends(), log)
    assert log.calls["last_record_times"] == 1 and log.calls["last_record_time"] == 0
    log.append(0, START + 2 * HOUR + 1)
    log.append(1, START + 2 * HOUR + 2)
    plan.plan_batch(state, log.log_ends(), {}, log, None)
    assert log.calls["last_record_times"] == 2
    assert log.questions[("last_record_time", 2, 2)] == 1, "asked at start; its log did not grow, so not again"
    assert log.questions[("last_record_time", 0, 4)] == log.questions[("last_record_time", 1, 3)] == 1


def test_nothing_to_ask_asks_nothing():
    for log in (RecordingLog(_three_partitions()), CountingLog(_three_partitions())):
        assert find_offsets_for_time(log, [], START) == {}
        assert find_next_records(log, {}) == {}
        assert find_last_record_times(log, {}) == {}
        assert log.calls == Counter()


def test_aligned_slices_ask_the_same_questions_in_one_call_per_kind():
    positions, log_ends = {0: 0, 1: 0, 2: 0}, {0: 3, 1: 2, 2: 2}
    plain, batched = RecordingLog(_three_partitions()), CountingLog(_three_partitions())
    expected = plan_aligned_slices(positions, log_ends, START + HOUR, plain)
    assert plan_aligned_slices(positions, log_ends, START + HOUR, batched) == expected
    # Partition 2's index answer is the marker at its position: its next record is asked for.
    assert batched.questions == plain.questions
    assert ("next_record", 2, 0) in batched.questions
    assert batched.calls == Counter(offsets_for_time=1, next_records=1)


def test_a_partition_at_its_log_end_is_not_asked_about():
    log = CountingLog(_three_partitions())
    plan_aligned_slices({0: 3, 1: 0, 2: 2}, {0: 3, 1: 2, 2: 2}, START + HOUR, log)
    assert log.questions == Counter({("offset_for_time", 1, START + HOUR): 1})


def _future_outlier_behind_an_aborted_transaction() -> FakeLog:
    log = FakeLog()
    log.append(0, *[START + i * 60_000 for i in range(10)])
    log.append_without_data(0, *[START + 10 * 60_000] * 50, START + 10 * HOUR)
    log.append(0, START + 365 * 24 * HOUR, *[START + (11 + i) * 60_000 for i in range(10)])
    log.append(1, *[START + i * 60_000 for i in range(30)])
    return log


def _catch_up(source: FakeLog, index_type, max_records: int):
    clock = ManualClock(START + 11 * HOUR)
    plan = planner(clock)
    log = index_type(source)
    state = _initial(plan, log)
    return catch_up_packed(plan, log, state, clock, max_records), log


def test_a_packed_catch_up_plans_the_same_batches_whether_the_index_answers_in_batches_or_not():
    sources = (
        skewed_backlog(hours=3, heavy_per_hour=400),
        transactional_backlog(),
        _future_outlier_behind_an_aborted_transaction(),
    )
    for source in sources:
        plain_result, plain = _catch_up(source, RecordingLog, max_records=500)
        batched_result, batched = _catch_up(source, CountingLog, max_records=500)
        assert batched_result == plain_result
        assert batched.questions == plain.questions, "the same questions, only grouped"
        assert (
            batched.calls["offset_for_time"] == batched.calls["next_record"] == batched.calls["last_record_time"] == 0
        )
        assert batched.calls["offsets_for_time"] < plain.calls["offset_for_time"]
        assert batched.calls["next_records"] < plain.calls["next_record"]
