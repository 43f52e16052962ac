"""The batch planner on the hard cases, against a log in memory and a manual clock.

``catch_up`` plays the persist job's part: it admits each planned slice, classifies lateness
under the batch's G and reports W_p after the batch back to the planner, as the job does.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from harness.fake_log import FakeLog, ManualClock
from tidemark.batch_planner import BatchPlanner, partition_watermark_after
from tidemark.partition_status import PartitionStatus
from tidemark.source_state import SourceState

BOUND = 30_000  # max out-of-orderness
DRIFT = 900_000  # 15 minutes
IDLE = 300_000
SKEW = 300_000
LATENESS = 600_000
HOUR = 3_600_000
START = 1_763_780_400_000  # 2025-11-22T03:00:00Z


def planner(clock, align=True) -> BatchPlanner:
    return BatchPlanner(BOUND, DRIFT, IDLE, SKEW, align, clock)


@dataclass
class CatchUp:
    state: SourceState
    batches: list[dict[int, list[int]]] = field(default_factory=list)
    late: dict[int, int] = field(default_factory=dict)
    global_watermarks: list[int | None] = field(default_factory=list)
    waits: int = 0

    def largest_spread(self) -> int:
        spreads = [0]
        for admitted in self.batches:
            highest = [max(ts) for ts in admitted.values() if ts]
            if len(highest) > 1:
                spreads.append(max(highest) - min(highest))
        return max(spreads)


def catch_up(
    plan, log, state, clock, max_records=None, feedback=None, step_ms=1_000, max_batches=5_000, stop_after=None
) -> CatchUp:
    result = CatchUp(state)
    feedback = dict(feedback or {})
    for _ in range(max_batches):
        if stop_after is not None and len(result.batches) == stop_after:
            break
        planned = plan.plan(state, log.log_ends(), feedback, log, max_records)
        if planned is state:
            if state.positions() == log.log_ends():
                break
            # Unread data but nothing planned: waiting for a caught-up partition to turn idle,
            # as the real trigger loop would; time passes.
            result.waits += 1
            clock.advance(step_ms)
            continue
        admitted = {
            p: log.data(p, state.partitions[p].position, planned.partitions[p].position) for p in planned.partitions
        }
        valid = {p: [t for t in ts if t - planned.read_time_ms <= SKEW] for p, ts in admitted.items()}
        g = planned.global_watermark_ms
        for p, ts in valid.items():
            result.late[p] = result.late.get(p, 0) + sum(1 for t in ts if g is not None and t < g - LATENESS)
        result.batches.append(valid)
        result.global_watermarks.append(g)
        feedback = {
            p: partition_watermark_after(planned.partitions[p], max(ts) if ts else None, BOUND)
            for p, ts in valid.items()
        }
        state = planned
        clock.advance(step_ms)
    else:
        raise AssertionError("the catch-up did not finish: deadlock")
    result.state = state
    return result


def skewed_backlog(hours=6, heavy_per_hour=3_600, seed=1) -> FakeLog:
    """Partition 0 one record per hour; partitions 1-3 heavy, with bounded disorder."""
    rng = random.Random(seed)
    log = FakeLog()
    log.append(0, *[START + h * HOUR + HOUR // 2 for h in range(hours)])
    for p in (1, 2, 3):
        step = HOUR // heavy_per_hour
        log.append(p, *[START + i * step - rng.randint(0, BOUND) for i in range(hours * heavy_per_hour)])
    return log


def _initial(plan, log):
    return plan.initial({p: 0 for p in log.timestamps}, log.log_ends(), log)


def test_slow_partition_beside_heavy_ones_stays_aligned_with_no_late_records():
    log = skewed_backlog()
    clock = ManualClock(START + 7 * HOUR)
    plan = planner(clock)
    result = catch_up(plan, log, _initial(plan, log), clock, max_records=5_000)

    assert result.state.positions() == log.log_ends(), "everything was read"
    assert result.largest_spread() <= DRIFT + BOUND
    assert sum(result.late.values()) == 0
    # Partition 0 is read to its end first. Its last record is over half an hour old, so it is
    # idle as soon as it is caught up and does not hold G: the heavy partitions never wait.
    assert result.waits == 0
    assert all(b is None or a is None or b >= a for a, b in zip(result.global_watermarks, result.global_watermarks[1:]))


def test_without_alignment_the_same_backlog_spreads_by_hours():
    log = skewed_backlog()
    clock = ManualClock(START + 7 * HOUR)
    plan = planner(clock, align=False)
    result = catch_up(plan, log, _initial(plan, log), clock, max_records=5_000)
    assert result.state.positions() == log.log_ends()
    assert result.largest_spread() > 4 * HOUR


def test_read_all_available_still_slices_by_target_and_a_row_budget_is_never_exceeded():
    log = skewed_backlog(hours=3)
    clock = ManualClock(START + 4 * HOUR)
    plan = planner(clock)
    unlimited = catch_up(plan, log, _initial(plan, log), clock, max_records=None)
    # Every heavy partition is cut at T = G + DRIFT, which proves W_p = T - BOUND - 1: G rises
    # by DRIFT - BOUND - 1 a batch. The k-th T is START + k x 869,999 ms less at most BOUND, the
    # heavy records run to START + 3 h - 1 s less at most BOUND: the 12th T (about START + 2 h
    # 54 min) leaves records, the 13th (past START + 3 h 7 min) reads them all. A 14th batch reads
    # nothing: it marks the caught-up partitions idle and G takes their final W_p (partition 0
    # turned idle long before and no longer counts), then holds.
    rises = [later - earlier for earlier, later in zip(unlimited.global_watermarks, unlimited.global_watermarks[1:])]
    assert rises[:12] == [DRIFT - BOUND - 1] * 12, "alignment cuts the backlog even with no row budget"
    final_heavy = min(max(log.timestamps[p]) for p in (1, 2, 3)) - BOUND - 1
    assert unlimited.global_watermarks[-1] == final_heavy
    assert len(unlimited.batches) == 14 and unlimited.batches[-1] == {p: [] for p in range(4)}
    assert unlimited.largest_spread() <= DRIFT + BOUND
    budget = catch_up(plan, log, _initial(plan, log), clock, max_records=700)
    # The first T alone holds some 2,600 heavy records: the budget is filled, never passed.
    assert max(sum(len(ts) for ts in b.values()) for b in budget.batches) == 700
    assert budget.state.positions() == log.log_ends()


def test_every_partition_idle_holds_g_and_plans_nothing():
    log = FakeLog()
    for p in range(3):
        log.append(p, START, START + 1_000)
    clock = ManualClock(START + HOUR)
    plan = planner(clock)
    done = catch_up(plan, log, _initial(plan, log), clock)
    g = done.state.global_watermark_ms
    clock.advance(10 * IDLE)
    after_idle = plan.plan(done.state, log.log_ends(), {}, log, None)
    assert all(s.status == PartitionStatus.IDLE for s in after_idle.partitions.values())
    assert after_idle.global_watermark_ms == g
    assert plan.plan(after_idle, log.log_ends(), {}, log, None) is after_idle, "nothing new: no batch"


def test_idle_partition_returning_with_old_data_is_read_without_deadlock_and_g_never_moves_back():
    """The FLINK-29099 shape: one partition idle while the others run ahead, then it returns
    with data older than G."""
    log = FakeLog()
    log.append(0, START)
    for p in (1, 2):
        log.append(p, *[START + i * 60_000 for i in range(60)])
    clock = ManualClock(START + 2 * HOUR)
    plan = planner(clock)
    first = catch_up(plan, log, _initial(plan, log), clock)
    assert first.state.partitions[0].status == PartitionStatus.IDLE
    g_before = first.state.global_watermark_ms
    assert g_before > START + 30 * 60_000, "G ran ahead without the idle partition"

    log.append(0, *[START + 1_000 * i for i in range(1, 50)])  # it returns with old records
    returning = plan.plan(first.state, log.log_ends(), {}, log, None)
    assert returning.partitions[0].status == PartitionStatus.ACTIVE, "unread records: never idle"
    back = catch_up(plan, log, first.state, clock, feedback={})
    assert back.state.positions() == log.log_ends(), "the returning data was read"
    assert min(g for g in back.global_watermarks if g is not None) >= g_before, "G never moves back"
    assert back.late[0] == 49, "behind G - allowed lateness: routed as late, not dropped"


def test_far_future_record_never_moves_a_watermark_nor_blocks_its_partition():
    log = FakeLog()
    next_year = START + 365 * 24 * HOUR
    log.append(0, *[START + i * 60_000 for i in range(30)], next_year, *[START + (30 + i) * 60_000 for i in range(30)])
    log.append(1, *[START + i * 60_000 for i in range(60)])
    clock = ManualClock(START + 2 * HOUR)
    plan = planner(clock)
    result = catch_up(plan, log, _initial(plan, log), clock, max_records=40)
    assert result.state.positions() == log.log_ends()
    assert max(s.watermark_ms for s in result.state.partitions.values()) < START + 2 * HOUR
    assert result.global_watermarks[-1] < START + HOUR
    assert sum(result.late.values()) == 0, "the records after the outlier are not late"


def test_restart_mid_catch_up_continues_exactly_where_it_stopped():
    log = skewed_backlog(hours=3, heavy_per_hour=1_200)
    clock = ManualClock(START + 4 * HOUR)
    uninterrupted = catch_up(planner(clock), log, _initial(planner(clock), log), clock, max_records=900)

    clock = ManualClock(START + 4 * HOUR)
    first = catch_up(planner(clock), log, _initial(planner(clock), log), clock, max_records=900, stop_after=5)
    checkpointed = SourceState.from_offset(json.loads(json.dumps(first.state.to_offset("telemetry"))))
    assert checkpointed == first.state
    feedback = {
        p: partition_watermark_after(first.state.partitions[p], max(ts) if ts else None, BOUND)
        for p, ts in first.batches[-1].items()
    }
    rest = catch_up(planner(clock), log, checkpointed, clock, max_records=900, feedback=feedback)

    assert first.batches + rest.batches == uninterrupted.batches
    assert rest.global_watermarks[0] >= first.global_watermarks[-1]


def test_a_caught_up_partition_that_just_produced_holds_g_until_quiet_for_idle_timeout():
    now = START + HOUR
    log = FakeLog()
    log.append(0, now - 60_000)  # produced a minute ago, then nothing
    log.append(1, *[now - 60_000 + i * 1_000 for i in range(30)])
    clock = ManualClock(now)
    plan = planner(clock)
    state = catch_up(plan, log, _initial(plan, log), clock, step_ms=0).state
    assert state.partitions[0].status == PartitionStatus.ACTIVE
    assert state.global_watermark_ms == now - 60_000 - BOUND - 1, "held at partition 0's watermark"

    clock.advance(IDLE - 60_000)  # its last record is now idle_timeout old
    later = plan.plan(state, log.log_ends(), {1: now - 31_001 + 29_000}, log, None)
    assert later.partitions[0].status == PartitionStatus.IDLE
    assert later.global_watermark_ms == now - 31_001 + 29_000, "G moves on without the idle partition"
