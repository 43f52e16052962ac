"""Several aligned steps in one batch (BatchPlanner.plan_batch), against a log in memory.

``catch_up_packed`` plays the persist job's part as the job does it for a packed batch: it
splits each partition's range into its steps (PlannedRange.of_batch), routes every record under
the G of its own step, and reports W_p after the batch back to the planner.
"""

from __future__ import annotations

import json

from test_batch_planner import BOUND, DRIFT, HOUR, LATENESS, SKEW, START, _initial, catch_up, planner, skewed_backlog

from harness.fake_log import FakeLog, ManualClock
from tidemark.batch_planner import watermark_after
from tidemark.planned_range import PlannedRange
from tidemark.source_state import SourceState

# skewed_backlog(hours=2) planned at START + 3 h with a budget of 3,000 rows: the first step
# reads the heavy partitions below T = G + DRIFT, about 3 x 870 records; the second step's T is
# DRIFT - BOUND - 1 later and holds as many again, more than the ~400 rows left, so the budget
# ends the batch inside it. Partition 0 (a record at START + 30 min) reads in neither.
STEPS_IN_A_3_000_ROW_BATCH = 2


def catch_up_packed(plan, log, state, clock, max_records, max_batches=5_000):
    """Returns (batches, steps, late, final state): per batch the offsets it read; per step the
    admitted log timestamps per partition and its G, in order."""
    batches, steps, late = [], [], 0
    feedback: dict[int, int | None] = {}
    for _ in range(max_batches):
        planned = plan.plan_batch(state, log.log_ends(), feedback, log, max_records)
        if planned is state:
            assert state.positions() == log.log_ends(), "nothing planned while records wait"
            return batches, steps, late, state
        ranges = PlannedRange.of_batch(state, planned)
        batches.append(sum(r.offsets for r in ranges))
        by_seq: dict[int, dict] = {}
        feedback = {}
        for planned_range in ranges:
            watermark = None
            for step in planned_range.steps:
                admitted = [
                    t
                    for t in log.data(planned_range.partition, step.start, step.end)
                    if t - planned.read_time_ms <= SKEW
                ]
                entry = by_seq.setdefault(step.seq, {"g": step.global_watermark_ms, "admitted": {}})
                assert entry["g"] == step.global_watermark_ms, "one G per step"
                entry["admitted"][planned_range.partition] = admitted
                g = step.global_watermark_ms
                late += sum(1 for t in admitted if g is not None and t < g - LATENESS)
                after = watermark_after(
                    step.watermark_ms, step.next_record_at_least_ms, max(admitted, default=None), BOUND
                )
                watermark = after if watermark is None or (after is not None and after > watermark) else watermark
            feedback[planned_range.partition] = watermark
        steps.extend(by_seq[seq] for seq in sorted(by_seq))
        state = planned
        clock.advance(1_000)
    raise AssertionError("the catch-up did not finish")


def largest_spread(steps) -> int:
    spreads = [0]
    for step in steps:
        highest = [max(ts) for ts in step["admitted"].values() if ts]
        if len(highest) > 1:
            spreads.append(max(highest) - min(highest))
    return max(spreads)


def test_packed_steps_each_stay_aligned_route_nothing_late_and_respect_the_budget():
    log = skewed_backlog()
    clock = ManualClock(START + 7 * HOUR)
    plan = planner(clock)
    one_step = catch_up(plan, log, _initial(plan, log), clock, max_records=5_000)
    clock = ManualClock(START + 7 * HOUR)
    batches, steps, late, state = catch_up_packed(plan, log, _initial(plan, log), clock, max_records=5_000)

    assert state.positions() == log.log_ends(), "everything was read"
    assert late == 0, "no record of the slow partition is late"
    assert largest_spread(steps) <= DRIFT + BOUND, "every step keeps the alignment guarantee"
    assert max(batches) <= 5_000, "a batch never reads past the row budget"
    records = sum(log.log_ends().values())
    assert len(batches) <= -(-records // 5_000) + 1 < len(one_step.batches), "batches follow the budget, not the steps"
    watermarks = [s["g"] for s in steps if s["g"] is not None]
    assert watermarks == sorted(watermarks), "G never decreases from step to step"


def test_a_sparse_backlog_costs_batches_by_its_volume_not_its_event_time_span():
    log = FakeLog()
    week = 7 * 24 * HOUR
    for p in range(4):
        log.append(p, *[START + i * (week // 250) + p * 1_000 for i in range(250)])  # 1,000 records over 7 days
    clock = ManualClock(START + week + HOUR)
    plan = planner(clock)
    one_step = catch_up(plan, log, _initial(plan, log), clock, max_records=5_000)
    clock = ManualClock(START + week + HOUR)
    batches, steps, late, state = catch_up_packed(plan, log, _initial(plan, log), clock, max_records=5_000)

    assert len(one_step.batches) > 200, "a step per gap between records: hundreds of batches"
    assert len(batches) <= 3
    assert state.positions() == log.log_ends() and late == 0
    assert largest_spread(steps) <= DRIFT + BOUND


def test_the_same_offsets_plan_the_same_steps_and_they_survive_the_checkpoint():
    log = skewed_backlog(hours=2)
    plans = []
    for _ in range(2):
        clock = ManualClock(START + 3 * HOUR)
        plan = planner(clock)
        plans.append(plan.plan_batch(_initial(plan, log), log.log_ends(), {}, log, 3_000))
    assert plans[0] == plans[1]
    assert len(plans[0].steps) == STEPS_IN_A_3_000_ROW_BATCH
    assert SourceState.from_offset(json.loads(json.dumps(plans[0].to_offset("telemetry")))) == plans[0]


def test_without_a_row_budget_a_batch_is_one_step():
    log = skewed_backlog(hours=2)
    clock = ManualClock(START + 3 * HOUR)
    plan = planner(clock)
    initial = _initial(plan, log)
    assert plan.plan_batch(initial, log.log_ends(), {}, log, None) == plan.plan(initial, log.log_ends(), {}, log, None)


def test_step_ranges_cut_each_range_contiguously_numbered_like_the_ledger():
    log = skewed_backlog(hours=2)
    clock = ManualClock(START + 3 * HOUR)
    plan = planner(clock)
    initial = _initial(plan, log)
    batch = plan.plan_batch(initial, log.log_ends(), {}, log, 3_000)
    seqs = range(batch.plan_seq - len(batch.steps) + 1, batch.plan_seq + 1)
    assert seqs.start == initial.plan_seq + 1, "the first step follows the previous batch"
    for planned in PlannedRange.of_batch(initial, batch):
        assert planned.steps[0].start == planned.start_offset and planned.steps[-1].end == planned.end_offset
        assert all(a.end == b.start for a, b in zip(planned.steps, planned.steps[1:])), "contiguous"
        assert planned.steps[-1].seq == batch.plan_seq, "every partition has a row in the last step"
        assert all(step.seq in seqs for step in planned.steps)
        assert all(step.end > step.start for step in planned.steps[:-1]), "earlier steps only where it read"


def test_a_batch_of_steps_seals_the_hours_one_batch_per_step_would():
    from tidemark.hour_sealer import HourSealer

    sealer = HourSealer(LATENESS)
    step_watermarks = [START + i * DRIFT for i in range(12)]  # three hours of 15-minute steps
    one_by_one, previous = [], None
    for g in step_watermarks:
        one_by_one += sealer.newly_sealed(previous, g)
        previous = g
    assert sealer.newly_sealed_by_steps(None, step_watermarks) == one_by_one
    # G runs from 03:00 to 05:45 and an hour seals at G >= its end + 10 min. The stream's first
    # G lists 01:00, the hour before the first one still open (02:00, sealed at 03:10); 02:00,
    # 03:00 and 04:00 seal as G passes 03:15, 04:15 and 05:15; 05:00 waits for 06:10.
    assert one_by_one == [START - 2 * HOUR, START - HOUR, START, START + HOUR], (
        "the stream's first batch seals every hour its steps passed"
    )
    assert sealer.newly_sealed_by_steps(START, [None, START + 3 * HOUR]) == sealer.newly_sealed(START, START + 3 * HOUR)


def test_the_persist_log_names_the_first_and_last_step_of_a_micro_batch():
    from spark_jobs.persist.batch import _first_and_last_step

    log = skewed_backlog(hours=2)
    plan = planner(ManualClock(START + 3 * HOUR))
    initial = _initial(plan, log)
    batch = plan.plan_batch(initial, log.log_ends(), {}, log, 3_000)
    ranges = {planned.partition: planned for planned in PlannedRange.of_batch(initial, batch)}

    assert len(batch.steps) == STEPS_IN_A_3_000_ROW_BATCH
    assert _first_and_last_step(ranges) == [initial.plan_seq + 1, batch.plan_seq] == [0, 1]
