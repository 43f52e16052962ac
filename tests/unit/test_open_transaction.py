"""A partition held by an open transaction is reported, named, after open_transaction_timeout."""

from __future__ import annotations

from test_batch_planner import BOUND, DRIFT, IDLE, SKEW, START

from harness.fake_log import FakeLog, ManualClock
from tidemark.batch_planner import BatchPlanner
from tidemark.open_transaction import OpenTransaction, track_open_transaction

TIMEOUT = 120_000


def test_nothing_is_open_when_the_stable_offset_is_the_written_end():
    assert track_open_transaction(None, 40, 40, START, TIMEOUT) is None
    held = OpenTransaction(30, 40, START, True)
    assert track_open_transaction(held, 40, 40, START + 1, TIMEOUT) is None, "committed or aborted: gone"


def test_the_clock_runs_while_the_stable_offset_stands_still_and_restarts_when_it_moves():
    first = track_open_transaction(None, 30, 40, START, TIMEOUT)
    assert first == OpenTransaction(30, 40, START, False)
    later = track_open_transaction(first, 30, 55, START + TIMEOUT - 1, TIMEOUT)
    assert later == OpenTransaction(30, 55, START, False) and later.written_end == 55, (
        "more written behind it: the same hold"
    )
    assert track_open_transaction(later, 30, 55, START + TIMEOUT, TIMEOUT).held
    moved = track_open_transaction(later, 35, 55, START + TIMEOUT, TIMEOUT)
    assert moved == OpenTransaction(35, 55, START + TIMEOUT, False), "a busy producer is not a dead one"


def test_the_planner_reports_a_hold_with_an_empty_batch_and_reads_the_records_once_committed():
    log = FakeLog()
    log.append(0, *[START + i * 1_000 for i in range(10)])  # 10 committed records
    log.append(1, *[START + i * 1_000 for i in range(10)])
    clock = ManualClock(START + 60_000)
    plan = BatchPlanner(BOUND, DRIFT, IDLE, SKEW, True, clock, open_transaction_timeout_ms=TIMEOUT)
    state = plan.initial({0: 0, 1: 0}, log.log_ends(), log)
    # Partition 1's stable offset is 10; a producer wrote 5 more records in a transaction still open.
    unstable = {1: (10, 15)}
    state = plan.plan(state, log.log_ends(), {}, log, None, unstable)
    assert state.positions() == {0: 10, 1: 10}, "read up to the stable offset, not past it"
    assert state.partitions[1].open_transaction == OpenTransaction(10, 15, START + 60_000, False)
    assert state.partitions[0].open_transaction is None

    clock.advance(TIMEOUT - 1)
    assert plan.plan(state, log.log_ends(), {}, log, None, unstable) is state, "not yet: no batch"
    assert plan.plan(state, log.log_ends(), {}, log, None, {1: (10, 40)}) is state, "writing on in it: no batch either"
    clock.advance(1)
    held = plan.plan(state, log.log_ends(), {}, log, None, unstable)
    assert held is not state and held.positions() == state.positions(), "an empty batch that reports the hold"
    assert held.partitions[1].open_transaction.held
    assert plan.plan(held, log.log_ends(), {}, log, None, unstable) is held, "reported once"

    log.append(1, *[START + (10 + i) * 1_000 for i in range(5)])  # committed
    log.append_without_data(1, START + 10 * 60_000)  # its commit marker
    after = plan.plan(held, log.log_ends(), {}, log, None, {})
    assert after.positions() == {0: 10, 1: 16} and after.partitions[1].open_transaction is None
