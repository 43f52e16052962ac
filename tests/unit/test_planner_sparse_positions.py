"""The planner on a log whose positions are sparse 56-digit numbers (Kinesis sequence numbers),
and on a resharded log: a child shard held until its parent is read to its end, a closed
parent FINISHED. Against a log in memory and a manual clock.

The log here answers the planner the way tidemark's Kinesis log does: positions are sequence
numbers with large gaps, the records between two positions are counted (``records_between``)
and a slice of n records ends where the log says (``position_after``), never by arithmetic.
"""

from __future__ import annotations

import bisect

from hypothesis import given
from hypothesis import strategies as st

from harness.fake_log import ManualClock
from tidemark.aligned_slices import LoggedRecord
from tidemark.batch_planner import BatchPlanner, partition_watermark_after
from tidemark.log_position import (
    KAFKA_OFFSETS,
    KINESIS_SEQUENCE_NUMBERS,
    position_from_key,
    position_key,
    position_value,
    records_between,
)
from tidemark.partition_status import PartitionStatus
from tidemark.source_state import PartitionState, SourceState

BOUND = 30_000
DRIFT = 900_000
IDLE = 300_000
SKEW = 300_000
MINUTE = 60_000
START = 1_763_780_400_000  # 2025-11-22T03:00:00Z
# A real shard's first sequence number: 56 digits, far past a long.
FIRST = 49590338271490256608559692538361571095921575989136588898
GAP = 10**20 + 7  # sequence numbers are never dense


class SparseLog:
    """Shards as sorted (sequence, timestamp) lists; implements the time index, counting and
    position_after over sparse positions. Its end is the last sequence + 1."""

    def __init__(self):
        self.records: dict[int, list[tuple[int, int]]] = {}

    def append(self, partition: int, first: int, *timestamps_ms: int) -> None:
        records = self.records.setdefault(partition, [])
        for i, ts in enumerate(timestamps_ms):
            records.append((first + i * GAP, ts))

    def start(self, partition: int) -> int:
        return self.records[partition][0][0]

    def end(self, partition: int) -> int:
        return self.records[partition][-1][0] + 1

    def _sequences(self, partition: int) -> list[int]:
        return [sequence for sequence, _ in self.records.get(partition, [])]

    def data(self, partition: int, start: int, end: int) -> list[int]:
        return [ts for sequence, ts in self.records.get(partition, []) if start <= sequence < end]

    def offset_for_time(self, partition: int, timestamp_ms: int) -> int | None:
        return next((s for s, ts in self.records.get(partition, []) if ts >= timestamp_ms), None)

    def next_record(self, partition: int, offset: int) -> LoggedRecord | None:
        sequences = self._sequences(partition)
        i = bisect.bisect_left(sequences, offset)
        return LoggedRecord(*self.records[partition][i]) if i < len(sequences) else None

    def last_record_time(self, partition: int, end: int) -> int | None:
        sequences = self._sequences(partition)
        i = bisect.bisect_left(sequences, end)
        return self.records[partition][i - 1][1] if i > 0 else None

    def records_between(self, partition: int, start: int, end: int) -> int:
        sequences = self._sequences(partition)
        return bisect.bisect_left(sequences, end) - bisect.bisect_left(sequences, start)

    def position_after(self, partition: int, start: int, count: int) -> int:
        sequences = self._sequences(partition)
        i = bisect.bisect_left(sequences, start) + count
        return sequences[i - 1] + 1 if i <= len(sequences) else self.end(partition)


def _state(log: SparseLog, partitions, now_ms: int) -> SourceState:
    return SourceState(
        plan_seq=-1,
        read_time_ms=now_ms,
        slicing="event_time",
        global_watermark_ms=None,
        target_ms=None,
        partitions={p: PartitionState(log.start(p), log.start(p), None, PartitionStatus.ACTIVE, 0) for p in partitions},
    )


def test_a_slice_of_n_records_holds_n_records_not_n_positions():
    log = SparseLog()
    log.append(0, FIRST, *[START + i * 1_000 for i in range(10)])
    clock = ManualClock(START + 60 * MINUTE)
    planner = BatchPlanner(BOUND, DRIFT, IDLE, SKEW, False, clock)
    state = _state(log, [0], clock.now_ms)

    planned = planner.plan(state, {0: log.end(0)}, {}, log, max_records=4)

    end = planned.partitions[0].position
    assert log.records_between(0, FIRST, end) == 4
    assert end == FIRST + 3 * GAP + 1, "the slice ends right after its 4th record"


def test_a_batch_packs_steps_up_to_the_row_budget_counted_in_records():
    log = SparseLog()
    log.append(0, FIRST, *[START + i * MINUTE for i in range(120)])
    log.append(1, FIRST + 5, *[START + i * MINUTE for i in range(120)])
    clock = ManualClock(START + 3 * 60 * MINUTE)
    planner = BatchPlanner(BOUND, DRIFT, IDLE, SKEW, True, clock)
    state = planner.plan(_state(log, [0, 1], clock.now_ms), {0: log.end(0), 1: log.end(1)}, {}, log, None)
    feedback = {p: partition_watermark_after(state.partitions[p], START + 14 * MINUTE, BOUND) for p in (0, 1)}

    batch = planner.plan_batch(state, {0: log.end(0), 1: log.end(1)}, feedback, log, max_records=50)

    read = sum(records_between(log, p, state.partitions[p].position, batch.partitions[p].position) for p in (0, 1))
    assert 0 < read <= 50
    assert len(batch.steps) > 1, "several aligned steps fit the budget of 50 records"


def _reshard_run(parent_end_ts: int, child_first_ts: int):
    """Parent shard 0 (closed) and its child 1, and an unrelated shard 2. The child is held while
    the parent has unread records and released once the parent is FINISHED, as the Kinesis
    source reports; one aligned step per batch, so each record is routed under its batch's G. Returns the batches' (G, admitted per partition) and the final state."""
    log = SparseLog()
    log.append(0, FIRST, *range(START, parent_end_ts, 20_000))
    log.append(1, FIRST * 3, *range(child_first_ts, child_first_ts + 30 * MINUTE, 20_000))
    log.append(2, FIRST * 7, *range(START, child_first_ts + 30 * MINUTE, 20_000))
    clock = ManualClock(child_first_ts + 60 * MINUTE)
    planner = BatchPlanner(BOUND, DRIFT, IDLE, SKEW, True, clock)
    state = _state(log, [0, 1, 2], clock.now_ms)
    ends = {p: log.end(p) for p in (0, 1, 2)}
    feedback: dict[int, int | None] = {}
    batches = []
    for _ in range(500):
        parent_done = state.partitions[0].position >= ends[0]
        held = () if parent_done else (1,)
        finished = (0,) if parent_done else ()
        readable = dict(ends) if parent_done else {**ends, 1: state.partitions[1].position}
        planned = planner.plan(state, readable, feedback, log, 2_000, held=held, finished=finished)
        if planned is state:
            break
        admitted = {p: log.data(p, state.partitions[p].position, planned.partitions[p].position) for p in ends}
        batches.append((planned.global_watermark_ms, admitted, dict(planned.partitions)))
        feedback = {
            p: partition_watermark_after(planned.partitions[p], max(ts) if ts else None, BOUND)
            for p, ts in admitted.items()
        }
        state = planned
        clock.advance(1_000)
    return log, batches, state


def test_a_child_shard_waits_for_its_parent_and_none_of_its_records_is_late():
    log, batches, state = _reshard_run(parent_end_ts=START + 50 * MINUTE, child_first_ts=START + 50 * MINUTE)

    assert state.positions() == {p: log.end(p) for p in (0, 1, 2)}, "every shard read to its end"
    first_child_batch = next(i for i, (_, admitted, _) in enumerate(batches) if admitted[1])
    assert all(not admitted[0] for _, admitted, _ in batches[first_child_batch:]), "parent before child"
    for g, admitted, _ in batches:
        assert all(g is None or ts >= g for ts in admitted[1]), "no child record behind G: none is late"
    watermarks = [g for g, _, _ in batches if g is not None]
    assert watermarks == sorted(watermarks), "G never decreased"
    # While the parent was read, G stayed below the child's first record.
    assert all(g is None or g < START + 50 * MINUTE for g, _, _ in batches[:first_child_batch])


def test_a_waiting_child_is_active_and_a_finished_parent_leaves_g_at_once():
    _, batches, state = _reshard_run(parent_end_ts=START + 50 * MINUTE, child_first_ts=START + 50 * MINUTE)

    first_child_batch = next(i for i, (_, admitted, _) in enumerate(batches) if admitted[1])
    waiting = [partitions[1].status for _, _, partitions in batches[:first_child_batch]]
    assert waiting and set(waiting) == {PartitionStatus.ACTIVE}, "a held child is never IDLE"
    assert state.partitions[0].status == PartitionStatus.FINISHED
    # With the parent FINISHED, G follows the shards still readable: past the parent's last record.
    assert state.global_watermark_ms > START + 50 * MINUTE


def test_the_held_child_holds_g_at_its_first_record_even_when_the_parent_is_far_behind():
    # The parent's records are much older than the child's: while the parent is read, G follows
    # the readable shards but never passes the waiting child's first record (less the bound).
    log, batches, state = _reshard_run(parent_end_ts=START + 30 * MINUTE, child_first_ts=START + 120 * MINUTE)

    first_child_batch = next(i for i, (_, admitted, _) in enumerate(batches) if admitted[1])
    held_gs = [g for g, _, _ in batches[:first_child_batch] if g is not None]
    assert held_gs and max(held_gs) <= START + 120 * MINUTE - BOUND - 1
    assert state.positions()[1] == log.end(1)


@given(st.integers(min_value=0, max_value=10**56 - 1), st.integers(min_value=0, max_value=10**56 - 1))
def test_position_keys_order_as_the_numbers_do(a, b):
    assert (position_key(a) < position_key(b)) == (a < b)
    assert position_from_key(position_key(a)) == a


def test_position_types_convert_each_way_and_refuse_what_is_not_a_position():
    assert KAFKA_OFFSETS.to_column(42) == 42 and KAFKA_OFFSETS.from_column(42) == 42
    key = KINESIS_SEQUENCE_NUMBERS.to_column(FIRST)
    assert len(key) == 64 and KINESIS_SEQUENCE_NUMBERS.from_column(key) == FIRST
    assert position_value(key) == FIRST and position_value(7) == 7 and position_value(None) is None
    for bad in ("49590338-2", "", "1e5"):
        try:
            position_from_key(bad)
        except ValueError as error:
            assert repr(bad) in str(error)
        else:
            raise AssertionError(f"{bad!r} was taken for a position")
    try:
        position_key(10**64)
    except ValueError as error:
        assert "65 digits" in str(error)
    else:
        raise AssertionError("a 65-digit position was kept")
