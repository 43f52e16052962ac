"""Two event-time defects, on a manual clock and a log in memory (issue 25, section 3).

1. A partition that turns IDLE in the same planning step in which it catches up (its last
   records are older than idle_timeout, as in any backlog of yesterday's data): the feedback of
   its last batch (its final W_p) arrives in the very plan that marks it IDLE. An IDLE partition
   is left out of G, so G never took that final W_p, and the backlog's last hours stayed
   unsealed until new records arrived.
2. A partition frozen before its first record (a consumer that cannot read it) has no W_p. An
   ACTIVE partition without W_p was left out of G, so G ran ahead of records it had not read,
   and they went to ``late`` when it moved. Without alignment nothing gives it a W_p before it
   is read (the log timestamp is not its event time); with alignment the time index does.

The expected values are derived here from the records, never from the planner.
"""

from __future__ import annotations

import dataclasses

import pytest
from test_batch_planner import BOUND, DRIFT, HOUR, IDLE, LATENESS, START, _initial, catch_up, planner

from harness.fake_log import FakeLog, ManualClock
from tidemark.batch_planner import partition_watermark_after, watermark_after
from tidemark.hour_sealer import HourSealer
from tidemark.partition_status import PartitionStatus
from tidemark.planned_range import PlannedRange
from tidemark.source_state import SourceState

MINUTE = 60_000


def _backlog(minutes: int) -> FakeLog:
    """Three partitions with one record a minute each for ``minutes`` minutes from START,
    partition p's records p seconds into the minute, so that their last records differ."""
    log = FakeLog()
    for p in range(3):
        log.append(p, *[START + i * MINUTE + p * 1_000 for i in range(minutes)])
    return log


def _last_event(minutes: int) -> dict[int, int]:
    return {p: START + (minutes - 1) * MINUTE + p * 1_000 for p in range(3)}


def _sealed_hours(global_watermarks) -> list[int]:
    sealer = HourSealer(LATENESS)
    sealed, previous = [], None
    for g in global_watermarks:
        sealed += sealer.newly_sealed(previous, g)
        previous = g if g is not None else previous
    return sealed


@pytest.mark.parametrize("align", [True, False], ids=["aligned", "record_count"])
@pytest.mark.parametrize("max_records", [None, 50], ids=["one_step", "packed_budget_50"])
def test_a_backlog_caught_up_after_idle_timeout_gives_g_every_partitions_final_watermark(align, max_records):
    # Records up to START + 3 h 11 min: the final G (START + 3 h 10 min 29.999 s) seals the hour
    # START + 2 h (its end + 10 minutes of allowed lateness is passed) by 29.999 s.
    log = _backlog(minutes=192)
    # An hour after the backlog's last record: every partition is IDLE the moment it catches up.
    clock = ManualClock(START + 4 * HOUR + 11 * MINUTE)
    plan = planner(clock, align=align)
    if max_records is None:
        result = catch_up(plan, log, _initial(plan, log), clock)
        final, global_watermarks = result.state, result.global_watermarks
        assert sum(result.late.values()) == 0
    else:
        final, global_watermarks = _catch_up_in_packed_batches(plan, log, clock, max_records)

    expected_g = min(_last_event(192).values()) - BOUND - 1
    assert expected_g == START + 3 * HOUR + 10 * MINUTE + 29_999
    assert final.positions() == log.log_ends()
    assert all(s.status == PartitionStatus.IDLE for s in final.partitions.values())
    assert final.global_watermark_ms == expected_g, "G took every partition's final W_p"
    assert _sealed_hours(global_watermarks)[-1] == START + 2 * HOUR, "the backlog's last complete hour is sealed"

    # Nothing new and every partition IDLE: G holds and no batch is planned.
    clock.advance(10 * IDLE)
    assert plan.plan(final, log.log_ends(), {}, log, None) is final


def _catch_up_in_packed_batches(plan, log, clock, max_records) -> tuple[SourceState, list[int | None]]:
    """The persist job's loop over ``plan_batch`` (several aligned steps a batch). W_p after the
    batch is reported back as the job does (spark_jobs.persist.batch): per step range, W_p
    before the step raised by its records' largest event time and by its cut at T."""
    state = _initial(plan, log)
    feedback: dict[int, int | None] = {}
    global_watermarks = []
    for _ in range(1_000):
        planned = plan.plan_batch(state, log.log_ends(), feedback, log, max_records)
        if planned is state:
            return state, global_watermarks
        global_watermarks += [step.global_watermark_ms for step in planned.steps] or [planned.global_watermark_ms]
        feedback = {}
        for planned_range in PlannedRange.of_batch(state, planned):
            after = None
            for step in planned_range.steps:
                admitted = log.data(planned_range.partition, step.start, step.end)
                candidate = watermark_after(
                    step.watermark_ms, step.next_record_at_least_ms, max(admitted, default=None), BOUND
                )
                after = candidate if after is None or (candidate is not None and candidate > after) else after
            feedback[planned_range.partition] = after
        state = planned
        clock.advance(1_000)
    raise AssertionError("the catch-up did not finish")


def test_a_partition_idle_after_catch_up_holds_g_no_longer_than_the_plan_that_folds_its_last_records():
    """Partition 0 catches up on an old backlog (IDLE at once) while partition 1 is live: G takes
    partition 0's final W_p once, then moves on with partition 1 alone."""
    now = START + 4 * HOUR
    log = FakeLog()
    log.append(0, *[START + i * MINUTE for i in range(60)])  # an hour of data, three hours old
    log.append(1, *[START + i * MINUTE for i in range(60)], *[now - 60_000 + i * 1_000 for i in range(30)])
    clock = ManualClock(now)
    plan = planner(clock, align=False)
    done = catch_up(plan, log, _initial(plan, log), clock, step_ms=0)
    assert done.state.partitions[0].status == PartitionStatus.IDLE
    assert done.state.partitions[1].status == PartitionStatus.ACTIVE
    # Partition 1's last record is now - 31 s: G is its W_p, partition 0 never holds it back.
    assert done.state.global_watermark_ms == now - 31_000 - BOUND - 1


@pytest.mark.parametrize("align", [True, False], ids=["aligned", "record_count"])
def test_a_partition_frozen_before_its_first_record_holds_g_and_none_of_its_records_is_late(align):
    log = _backlog(minutes=180)
    clock = ManualClock(START + 4 * HOUR)
    plan = planner(clock, align=align)
    frozen = _catch_up_with_frozen(plan, log, _initial(plan, log), clock, frozen=2)
    assert frozen.state.partitions[2].position == 0
    assert frozen.state.partitions[2].status == PartitionStatus.ACTIVE, "unread records: never IDLE"
    if align:
        # The time index gives it W_p from its first record (START + 2 s): G waits there, and
        # the others read no further than T = G + max_drift.
        assert frozen.state.global_watermark_ms == START + 2_000 - BOUND - 1
        assert all(
            ts < START + 2_000 - BOUND - 1 + DRIFT
            for p in (0, 1)
            for ts in log.data(p, 0, frozen.state.partitions[p].position)
        )
    else:
        # Nothing is known of its records' event times until they are read: G does not start.
        assert frozen.state.global_watermark_ms is None
        assert all(frozen.state.partitions[p].position == log.log_ends()[p] for p in (0, 1)), "the others read on"

    thawed = catch_up(plan, log, frozen.state, clock, feedback=frozen.feedback)
    assert thawed.state.positions() == log.log_ends()
    assert thawed.late.get(2, 0) == 0, "the frozen partition's records are on time when it moves"
    last_event = _last_event(180)
    if align:
        # All three catch up in the same step: G takes the least of their final W_p.
        assert thawed.state.global_watermark_ms == min(last_event.values()) - BOUND - 1
    else:
        # Partitions 0 and 1 turned IDLE long before; partition 2 alone counts when it is read.
        assert thawed.state.global_watermark_ms == last_event[2] - BOUND - 1


@dataclasses.dataclass
class _Frozen:
    state: SourceState
    feedback: dict


def _catch_up_with_frozen(plan, log, state, clock, frozen: int) -> _Frozen:
    """Plan and read as the persist job does, with partition ``frozen`` never read (the chaos
    switch of the Kafka source: planned as usual, its position kept)."""
    feedback: dict[int, int | None] = {}
    for _ in range(500):
        planned = plan.plan(state, log.log_ends(), feedback, log, None)
        if planned is not state:
            kept = dataclasses.replace(
                planned.partitions[frozen], position=state.partitions[frozen].position, next_record_at_least_ms=None
            )
            planned = dataclasses.replace(planned, partitions={**planned.partitions, frozen: kept})
        if planned.positions() == state.positions() and planned.global_watermark_ms == state.global_watermark_ms:
            return _Frozen(state, feedback)
        feedback = {
            p: partition_watermark_after(
                after, max(ts) if (ts := log.data(p, state.partitions[p].position, after.position)) else None, BOUND
            )
            for p, after in planned.partitions.items()
        }
        state = planned
        clock.advance(1_000)
    raise AssertionError("did not settle")


def test_an_empty_partition_never_holds_g():
    """The deadlock users were burned by: a partition that never had a record must not hold G,
    not for a moment. It has nothing to read and has never produced: IDLE from the start."""
    log = _backlog(minutes=120)
    log.timestamps[3] = []
    clock = ManualClock(START + 3 * HOUR)
    plan = planner(clock, align=False)
    done = catch_up(plan, log, _initial(plan, log), clock)
    assert done.state.partitions[3].status == PartitionStatus.IDLE
    assert done.state.global_watermark_ms == min(_last_event(120).values()) - BOUND - 1
