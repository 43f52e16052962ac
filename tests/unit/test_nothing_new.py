"""tidemark.nothing_new: a persist run is skipped only when the planner would plan no batch."""

from __future__ import annotations

from tidemark.batch_planner import BatchPlanner
from tidemark.nothing_new import LedgerPartition, LogPartitionNow, look_for_work
from tidemark.partition_status import PartitionStatus
from tidemark.source_state import PartitionState, SourceState

ACTIVE, IDLE, FINISHED = PartitionStatus.ACTIVE, PartitionStatus.IDLE, PartitionStatus.FINISHED
NOW = 1_764_000_000_000
IDLE_TIMEOUT = 300_000
G = NOW - 600_000


def look(ledger, log, now=NOW):
    return look_for_work(ledger, log, G, IDLE_TIMEOUT, now)


def test_caught_up_idle_partitions_are_nothing_new_and_the_reason_says_why():
    ledger = {0: LedgerPartition(120, IDLE), 1: LedgerPartition(80, IDLE)}
    answer = look(ledger, {0: LogPartitionNow(0, 120), 1: LogPartitionNow(10, 80)})
    assert answer.nothing_new
    assert "all 2 partitions (IDLE)" in answer.reason and "nothing to seal" in answer.reason


def test_a_log_end_past_the_ledger_position_is_work_named_by_partition():
    ledger = {0: LedgerPartition(120, IDLE), 1: LedgerPartition(80, IDLE)}
    answer = look(ledger, {0: LogPartitionNow(0, 120), 1: LogPartitionNow(10, 81)})
    assert not answer.nothing_new
    assert answer.reason == "partition 1: the log ends at 81, past the ledger's offset 80"


def test_an_active_partition_quiet_past_the_idle_timeout_turns_idle_which_is_work():
    ledger = {0: LedgerPartition(120, ACTIVE)}
    quiet = look(ledger, {0: LogPartitionNow(0, 120, last_produced_ms=NOW - IDLE_TIMEOUT)})
    assert not quiet.nothing_new and "turns IDLE" in quiet.reason
    recent = look(ledger, {0: LogPartitionNow(0, 120, last_produced_ms=NOW - IDLE_TIMEOUT + 1)})
    assert recent.nothing_new


def test_an_active_partition_whose_last_record_time_is_unknown_runs_the_job():
    answer = look({0: LedgerPartition(120, ACTIVE)}, {0: LogPartitionNow(0, 120)})
    assert not answer.nothing_new and "may turn IDLE" in answer.reason


def test_what_the_look_cannot_judge_runs_the_job():
    ledger = {0: LedgerPartition(120, IDLE)}
    assert not look({}, {0: LogPartitionNow(0, 0)}).nothing_new  # nothing persisted yet
    assert "not in the ledger" in look(ledger, {0: LogPartitionNow(0, 120), 1: LogPartitionNow(0, 0)}).reason
    assert "not in the log" in look(ledger, {}).reason
    assert "left the log unread" in look(ledger, {0: LogPartitionNow(121, 125)}).reason
    unsettled = look(ledger, {0: LogPartitionNow(0, 120, unsettled="a transaction is open past offset 120")})
    assert unsettled.reason == "partition 0: a transaction is open past offset 120"
    assert "not yet FINISHED" in look(ledger, {0: LogPartitionNow(0, 120, finished=True)}).reason


def test_finished_shards_are_nothing_new_even_when_no_longer_listed():
    ledger = {0: LedgerPartition(500, FINISHED), 1: LedgerPartition(900, IDLE)}
    assert look(ledger, {1: LogPartitionNow(0, 900)}).nothing_new


def test_the_look_agrees_with_the_planner_on_whether_a_batch_is_planned():
    """The same state judged both ways, over positions, ends, statuses and clocks: nothing new
    exactly when BatchPlanner.plan returns the state it was given."""

    class Index:
        def __init__(self, last_times):
            self.last_times = last_times

        def offset_for_time(self, partition, timestamp_ms):
            return None

        def next_record(self, partition, offset):
            return None

        def last_record_time(self, partition, end):
            return self.last_times[partition]

    for ends, statuses, last_produced, now in [
        ({0: 100, 1: 50}, (IDLE, IDLE), (NOW - 900_000, NOW - 900_000), NOW),
        ({0: 100, 1: 50}, (ACTIVE, IDLE), (NOW - 100_000, NOW - 900_000), NOW),
        ({0: 100, 1: 50}, (ACTIVE, IDLE), (NOW - 400_000, NOW - 900_000), NOW),
        ({0: 100, 1: 51}, (IDLE, IDLE), (NOW - 900_000, NOW - 900_000), NOW),
    ]:
        positions = {0: 100, 1: 50}
        state = SourceState(
            plan_seq=7,
            read_time_ms=NOW - 60_000,
            slicing="event_time",
            global_watermark_ms=G,
            target_ms=None,
            partitions={
                p: PartitionState(positions[p], positions[p], G + p, statuses[p], last_produced[p]) for p in positions
            },
        )
        planner = BatchPlanner(5_000, 60_000, IDLE_TIMEOUT, 3_600_000, True, clock=lambda now=now: now / 1000)
        planned = planner.plan(state, ends, {}, Index(dict(enumerate(last_produced))), None)
        answer = look(
            {p: LedgerPartition(positions[p], statuses[p]) for p in positions},
            {p: LogPartitionNow(0, ends[p], last_produced_ms=last_produced[p]) for p in positions},
            now,
        )
        assert answer.nothing_new == (planned is state), (ends, statuses, last_produced, answer.reason)
