"""The planner on logs where offsets are not records: transaction markers, aborted transactions
(read_committed) and compacted offsets, against a log in memory and a manual clock.

The probe that found the bug: a transactional topic stopped being read after its first
transaction, because the planner took "no data record at this offset" for "end of partition".
"""

from __future__ import annotations

from test_batch_planner import BOUND, DRIFT, HOUR, IDLE, START, _initial, catch_up, planner

from harness.fake_log import FakeLog, ManualClock

MINUTE = 60_000


def transactional_backlog(
    partitions=2, transactions=20, records=25, abort_every=5, commit_time=START + 10 * HOUR
) -> FakeLog:
    """Per partition: transactions of ``records`` records one minute of event time apart, each
    closed by a marker stamped with the wall clock of the commit (later than every event time);
    every ``abort_every``-th transaction is aborted (its records and marker hold no data)."""
    log = FakeLog()
    for p in range(partitions):
        event_time = START
        for t in range(transactions):
            times = [event_time + i * MINUTE for i in range(records)]
            event_time += records * MINUTE
            if (t + 1) % abort_every == 0:
                log.append_without_data(p, *times, commit_time)
            else:
                log.append(p, *times)
                log.append_without_data(p, commit_time)
    return log


def committed(log: FakeLog, partition: int) -> list[int]:
    return log.data(partition, 0, log.log_ends()[partition])


def _admitted(result, partition: int) -> list[int]:
    return [ts for batch in result.batches for ts in batch.get(partition, [])]


def test_transactional_topic_is_read_to_its_log_end_through_markers_and_aborted_transactions():
    log = transactional_backlog()
    clock = ManualClock(START + 11 * HOUR)
    plan = planner(clock)
    result = catch_up(plan, log, _initial(plan, log), clock, max_records=100)

    assert result.state.positions() == log.log_ends(), "every partition reaches its log end"
    for p in (0, 1):
        assert _admitted(result, p) == committed(log, p), "each committed record once, in order, no aborted one"
        assert len(committed(log, p)) == 16 * 25
    assert sum(result.late.values()) == 0, "markers stamped later than the records never raise a watermark"
    gs = [g for g in result.global_watermarks if g is not None]
    assert gs == sorted(gs), "G never moves back"


def test_a_cut_at_a_marker_is_not_taken_as_proof_that_the_next_record_is_past_the_target():
    log = FakeLog()
    # Ten records, a commit marker stamped hours later, then ten more records of the same hour.
    log.append(0, *[START + i * MINUTE for i in range(10)])
    log.append_without_data(0, START + 10 * HOUR)
    log.append(0, *[START + (10 + i) * MINUTE for i in range(10)])
    log.append(1, *[START + i * MINUTE for i in range(21)])
    clock = ManualClock(START + 11 * HOUR)
    plan = planner(clock)
    first = plan.plan(_initial(plan, log), log.log_ends(), {}, log, 10)  # record-count batch: G unknown yet
    second = plan.plan(
        first, log.log_ends(), {0: START + 9 * MINUTE - BOUND - 1, 1: START + 9 * MINUTE - BOUND - 1}, log, None
    )

    assert second.target_ms < START + 10 * HOUR
    assert second.partitions[0].position == 10, "the index answers with the marker: the slice stops there"
    assert second.partitions[0].next_record_at_least_ms is None, "the record behind the marker is below T: no claim"


def test_a_tail_of_markers_and_aborted_records_is_stepped_over():
    log = FakeLog()
    log.append(0, *[START + i * MINUTE for i in range(5)])
    log.append_without_data(0, START + 5 * MINUTE, START + 6 * MINUTE, START + 10 * HOUR)  # aborted x2, abort marker
    log.append(1, *[START + i * MINUTE for i in range(8)])
    log.append_without_data(1, START + 10 * HOUR)  # commit marker
    clock = ManualClock(START + 11 * HOUR)
    plan = planner(clock)
    result = catch_up(plan, log, _initial(plan, log), clock, max_records=3)
    assert result.state.positions() == {0: 8, 1: 9}
    assert _admitted(result, 0) == committed(log, 0) and _admitted(result, 1) == committed(log, 1)


def test_a_future_outlier_behind_an_aborted_transaction_is_read_alone_in_one_step():
    log = FakeLog()
    next_year = START + 365 * 24 * HOUR
    log.append(0, *[START + i * MINUTE for i in range(10)])
    log.append_without_data(0, *[START + 10 * MINUTE] * 500, START + 10 * HOUR)  # a large aborted transaction
    log.append(0, next_year, *[START + (11 + i) * MINUTE for i in range(10)])
    log.append(1, *[START + i * MINUTE for i in range(30)])
    clock = ManualClock(START + 2 * HOUR)
    plan = planner(clock)
    result = catch_up(plan, log, _initial(plan, log), clock, max_records=1_000)
    assert result.state.positions() == log.log_ends()
    assert len(result.batches) < 10, "the aborted offsets are stepped over in one slice, not one per batch"
    assert max(s.watermark_ms for s in result.state.partitions.values()) < START + HOUR
    assert sum(result.late.values()) == 0


def test_compacted_offsets_leave_holes_and_every_retained_record_is_read_once():
    log = FakeLog()
    for p in (0, 1):
        for i in range(300):
            if i % 3 == 1:
                log.append_without_data(p, START + i * MINUTE)  # removed by compaction
            else:
                log.append(p, START + i * MINUTE)
    clock = ManualClock(START + 6 * HOUR)
    plan = planner(clock)
    result = catch_up(plan, log, _initial(plan, log), clock, max_records=50)
    assert result.state.positions() == log.log_ends()
    for p in (0, 1):
        assert _admitted(result, p) == committed(log, p) and len(committed(log, p)) == 200
    assert result.largest_spread() <= DRIFT + BOUND
    assert sum(result.late.values()) == 0


def test_idleness_counts_from_the_last_data_record_not_from_the_trailing_marker():
    now = START + HOUR
    log = FakeLog()
    log.append(0, now - 60_000)  # a record a minute ago, then its commit marker
    log.append_without_data(0, now - 59_000)
    log.append(1, *[now - 2 * HOUR + i * MINUTE for i in range(60)])
    log.append_without_data(1, now - HOUR)  # last record two hours ago: idle at once
    clock = ManualClock(now)
    plan = planner(clock)
    state = catch_up(plan, log, _initial(plan, log), clock, step_ms=0).state
    assert state.partitions[0].last_produced_ms == now - 60_000
    assert state.partitions[1].last_produced_ms == now - 2 * HOUR + 59 * MINUTE
    assert state.partitions[1].status.value == "IDLE"
    clock.advance(IDLE)
    assert plan.plan(state, log.log_ends(), {}, log, None).partitions[0].status.value == "IDLE"
