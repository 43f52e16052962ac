"""Plans the next batch: folds what the last batch taught into the event-time state, then slices.

For every partition: its watermark W_p is raised by the last batch's result (``feedback``: W_p
after the batch, computed from the decoded event times of valid records) and by what the time
index proved (a slice cut at T means the next record is >= T); its status is re-derived from
its position. Then G = max(G, min W_p over ACTIVE) and, with alignment, every partition's slice
ends at its first record with log timestamp >= T = G + max_drift.

No deadlock: when no partition can read below T, every ACTIVE partition with unread data has
its next record at or beyond T, so their watermarks rise to (next record time − bound − 1), G
rises with them and T passes the earliest next record. This needs max_drift > max out-of-
orderness (checked by the stream configuration).

A batch may pack several such steps (``plan_batch``): after the first, each further step is
planned from the one before by the same rule, up to the row budget. Without the decoded
feedback of the steps before it (the batch is planned before it is read), a further step
raises W_p only by what the time index proves, which is never more than the feedback would:
its G is a G the one-step planner could also have reached, so every step keeps the alignment
guarantee. Packing stops when a step would read nothing (a partition that needs its own records'
event times to let G pass holds it, until the next batch brings the feedback).

Offsets without data records (transaction markers, aborted transactions, compacted offsets) are
stepped over (see tidemark.aligned_slices), and a partition whose readable end stands still
below its written end is tracked as held by an open transaction (tidemark.open_transaction).

Two kinds of partition come from logs that change shape (Kinesis resharding), given per plan by
the source: ``held`` partitions have unread records that cannot be read yet (a child shard
waiting for its parents to be read to their end, a shard whose reader is behind but has no
record in hand): they are ACTIVE, hold G as unread records do, and with alignment their W_p
starts from their next record, so G never passes a record only because it had to wait.
``finished`` partitions are read to an end they can never pass (a closed shard): FINISHED, out
of G's minimum at once. Positions are counted by the log (tidemark.log_position), never by
arithmetic: Kinesis sequence numbers are sparse.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Collection, Mapping

from tidemark.aligned_slices import (
    LoggedRecord,
    LogTimeIndex,
    find_last_record_times,
    find_next_records,
    plan_aligned_slices,
)
from tidemark.global_watermark import GlobalWatermark
from tidemark.log_position import records_read
from tidemark.open_transaction import track_open_transaction
from tidemark.partition_status import PartitionStatus, partition_status
from tidemark.partition_watermark import PartitionWatermark
from tidemark.record_count_slices import plan_record_count_slices
from tidemark.source_state import EVENT_TIME_SLICING, RECORD_COUNT_SLICING, PartitionState, PlannedStep, SourceState

# Each round raises G by at least max_drift − bound; this only stops a broken index looping forever.
_MAX_ROUNDS = 10_000


class BatchPlanner:
    def __init__(
        self,
        max_out_of_orderness_ms: int,
        max_drift_ms: int,
        idle_timeout_ms: int,
        max_future_skew_ms: int,
        align: bool,
        clock: Callable[[], float] = time.time,
        open_transaction_timeout_ms: int = 15 * 60_000,
    ):
        self._bound_ms = max_out_of_orderness_ms
        self._open_transaction_timeout_ms = open_transaction_timeout_ms
        self._max_drift_ms = max_drift_ms
        self._idle_timeout_ms = idle_timeout_ms
        self._max_future_skew_ms = max_future_skew_ms
        self._align = align
        self._clock = clock

    def initial(self, positions: Mapping[int, int], log_ends: Mapping[int, int], index: LogTimeIndex) -> SourceState:
        now = self._now_ms()
        last_produced = self._last_produced(index, {p: log_ends[p] for p in positions}, now)
        return SourceState(
            plan_seq=-1,
            read_time_ms=now,
            slicing=EVENT_TIME_SLICING if self._align else RECORD_COUNT_SLICING,
            global_watermark_ms=None,
            target_ms=None,
            partitions={
                p: PartitionState(positions[p], log_ends[p], None, PartitionStatus.ACTIVE, last_produced[p])
                for p in positions
            },
        )

    @staticmethod
    def _last_produced(index: LogTimeIndex, log_ends: Mapping[int, int], now: int) -> dict[int, int]:
        """When each partition ({partition: log end}) last produced: its last data record's
        timestamp (never after now), asked for all partitions at once.

        From the log, not from when this planner happened to look: a partition whose backlog
        ends hours ago has been quiet for hours, even if the job started a second ago. The last
        offset of a transactional partition is a commit marker, not a record: the index looks
        back to the last data record. A partition with no data record has never produced (0).
        """
        asked = find_last_record_times(index, {p: end for p, end in log_ends.items() if end > 0})
        return {p: min(asked[p], now) if asked.get(p) is not None else 0 for p in log_ends}

    def plan_batch(
        self,
        previous: SourceState,
        log_ends: Mapping[int, int],
        feedback: Mapping[int, int | None],
        index: LogTimeIndex,
        max_records: int | None,
        unstable_ends: Mapping[int, tuple[int, int]] | None = None,
        held: Collection[int] = (),
        finished: Collection[int] = (),
    ) -> SourceState:
        """The next batch: one step (``plan``), or with alignment and a row budget as many
        consecutive aligned steps as the budget holds; ``previous`` when there is nothing to do.

        Without a row budget a batch is one step: the budget is what bounds a batch's memory.
        The state returned is the last step's, with ``steps`` listing every step when there are
        several; the steps share the batch's read time and are numbered plan_seq - n + 1 ..
        plan_seq (the batch ids of the ledger).
        """
        first = self.plan(previous, log_ends, feedback, index, max_records, unstable_ends, held, finished)
        if first is previous or first.target_ms is None or max_records is None:
            return first
        steps = [first]
        budget = max_records - _records_read(index, previous, first)
        while budget > 0:
            following = self.plan(steps[-1], log_ends, {}, index, budget, unstable_ends, held, finished)
            read = _records_read(index, steps[-1], following)
            if following is steps[-1] or read == 0 or following.target_ms is None:
                break
            steps.append(following)
            budget -= read
        if len(steps) == 1:
            return first
        before = [previous, *steps[:-1]]
        planned_steps = []
        for earlier, step in zip(before, steps):
            read = [p for p, state in step.partitions.items() if state.position != earlier.partitions[p].position]
            planned_steps.append(
                PlannedStep(
                    step.global_watermark_ms,
                    step.target_ms,
                    {p: step.partitions[p].position for p in read},
                    {p: step.partitions[p].watermark_ms for p in read},
                    {p: step.partitions[p].next_record_at_least_ms for p in read},
                )
            )
        # Every step took a plan_seq (plan numbers them one by one): the batch is its last.
        return dataclasses.replace(steps[-1], read_time_ms=first.read_time_ms, steps=tuple(planned_steps))

    def plan(
        self,
        previous: SourceState,
        log_ends: Mapping[int, int],
        feedback: Mapping[int, int | None],
        index: LogTimeIndex,
        max_records: int | None,
        unstable_ends: Mapping[int, tuple[int, int]] | None = None,
        held: Collection[int] = (),
        finished: Collection[int] = (),
    ) -> SourceState:
        """The next batch's state; ``previous`` itself when there is nothing new to do.

        ``log_ends`` are the readable ends to plan up to. ``unstable_ends`` names the partitions
        whose last stable offset stands below the written end right now, as
        {partition: (last stable offset, written end)}; the others have no open transaction.
        ``held``: partitions with unread records that cannot be read now; ``finished``:
        partitions read to an end they can never pass (see the module docstring).
        """
        now = self._now_ms()
        unstable_ends = unstable_ends or {}
        finished = frozenset(finished)
        held = frozenset(held) - finished
        positions = previous.positions()
        ends_now = {p: max(log_ends.get(p, state.log_end), state.position) for p, state in previous.partitions.items()}
        watermarks = self._partition_watermarks(previous, feedback)
        if self._align:
            self._raise_unknown_watermarks(previous, watermarks, ends_now, held, index, now)
        last_produced = self._last_produced_now(previous, ends_now, index, now)
        statuses = self._statuses(previous, ends_now, last_produced, held, finished, now)
        global_watermark, fold_global_watermark = _global_watermark(previous, watermarks, statuses, ends_now, held)
        fold_global_watermark()
        ends, cut, target = self._slice(
            positions, log_ends, watermarks, statuses, global_watermark, fold_global_watermark, index, max_records, now
        )
        g = global_watermark.current_ms
        partitions = {
            p: PartitionState(
                position=ends[p],
                log_end=ends_now[p],
                watermark_ms=watermarks[p].current_ms,
                status=statuses[p],
                last_produced_ms=last_produced[p],
                next_record_at_least_ms=target if cut.get(p) else None,
                open_transaction=self._open_transaction(state, unstable_ends.get(p), now),
            )
            for p, state in previous.partitions.items()
        }
        if _nothing_new(previous, ends, g, partitions):
            return previous
        return SourceState(
            plan_seq=previous.plan_seq + 1,
            read_time_ms=now,
            slicing=EVENT_TIME_SLICING if self._align else RECORD_COUNT_SLICING,
            global_watermark_ms=g,
            target_ms=target,
            partitions=partitions,
        )

    def _partition_watermarks(
        self, previous: SourceState, feedback: Mapping[int, int | None]
    ) -> dict[int, PartitionWatermark]:
        """Each partition's W_p as the last batch left it, with the records it read folded in."""
        watermarks = {}
        for p, state in previous.partitions.items():
            watermark = PartitionWatermark(self._bound_ms, state.watermark_ms)
            watermark.on_watermark(feedback.get(p))
            if state.next_record_at_least_ms is not None:
                watermark.on_next_record_at_least(state.next_record_at_least_ms)
            watermarks[p] = watermark
        return watermarks

    def _raise_unknown_watermarks(
        self,
        previous: SourceState,
        watermarks: dict[int, PartitionWatermark],
        ends_now: Mapping[int, int],
        held: frozenset[int],
        index: LogTimeIndex,
        now: int,
    ) -> None:
        """A partition without W_p yet starts from its next record (asked for all at once). A held
        partition's next record is its next whatever it waits for: it may be asked beyond the
        readable end."""
        unknown = {
            p: state.position
            for p, state in previous.partitions.items()
            if watermarks[p].current_ms is None and (state.position < ends_now[p] or p in held)
        }
        following = find_next_records(index, unknown)
        for p in unknown:
            self._raise_to_record(watermarks[p], following[p], None if p in held else ends_now[p], now)

    def _last_produced_now(
        self, previous: SourceState, ends_now: Mapping[int, int], index: LogTimeIndex, now: int
    ) -> dict[int, int]:
        """When each partition last produced (ms). Only a partition whose log grew can have
        produced since: its last records are asked, all at once."""
        grown = {p: ends_now[p] for p, state in previous.partitions.items() if ends_now[p] > state.log_end}
        kept = {p: state.last_produced_ms for p, state in previous.partitions.items() if p not in grown}
        return kept | self._last_produced(index, grown, now)

    def _statuses(
        self,
        previous: SourceState,
        ends_now: Mapping[int, int],
        last_produced: Mapping[int, int],
        held: frozenset[int],
        finished: frozenset[int],
        now: int,
    ) -> dict[int, PartitionStatus]:
        """FINISHED for a partition read to an end it can never pass, ACTIVE while held, else by
        its backlog and how long it has been quiet (tidemark.partition_status)."""
        statuses = {}
        for p, state in previous.partitions.items():
            if p in finished:
                statuses[p] = PartitionStatus.FINISHED
            elif p in held:
                statuses[p] = PartitionStatus.ACTIVE
            else:
                statuses[p] = partition_status(
                    state.position, ends_now[p], last_produced[p], now, self._idle_timeout_ms
                )
        return statuses

    def _open_transaction(self, state: PartitionState, unstable: tuple[int, int] | None, now: int):
        """The partition's open transaction after this look: None when its last stable offset
        stands at its written end (``unstable`` None)."""
        if unstable is None:
            return None
        return track_open_transaction(state.open_transaction, *unstable, now, self._open_transaction_timeout_ms)

    def _slice(
        self,
        positions,
        log_ends,
        watermarks,
        statuses,
        global_watermark,
        fold_global_watermark,
        index,
        max_records,
        now,
    ):
        """Ends per partition, which were cut at the target, and the target (None: not aligned).
        ``fold_global_watermark()`` folds the partitions' watermarks, as raised, into G."""
        if not self._align or global_watermark.current_ms is None:
            capped_ends = {p: max(log_ends.get(p, positions[p]), positions[p]) for p in positions}
            return plan_record_count_slices(positions, capped_ends, max_records, index), {}, None
        for _ in range(_MAX_ROUNDS):
            target = global_watermark.current_ms + self._max_drift_ms
            slices = plan_aligned_slices(positions, log_ends, target, index, max_records)
            ends = {p: s.end for p, s in slices.items()}
            if ends != positions:
                return ends, self._trustworthy_cuts(slices, target, index, now), target
            # Nothing below T anywhere: the next record of every partition with unread data is
            # at or past T, which raises its watermark; G follows, and T with it.
            before = global_watermark.current_ms
            doomed = {}
            waiting = {
                p: position
                for p, position in positions.items()
                if position < log_ends.get(p, position) and statuses[p] == PartitionStatus.ACTIVE
            }
            following = find_next_records(index, waiting)
            for p in waiting:
                outlier_end = self._raise_to_record(watermarks[p], following[p], log_ends.get(p, positions[p]), now)
                if outlier_end is not None:
                    doomed[p] = outlier_end
            if doomed:
                # A far-future record heads the partition: it will be quarantined and must not
                # move any watermark, but it must not block the partition either: read it alone.
                return {**ends, **doomed}, {}, target
            fold_global_watermark()
            if global_watermark.current_ms == before:
                return ends, self._trustworthy_cuts(slices, target, index, now), target
        raise RuntimeError("aligned planning did not converge; the log's time index looks inconsistent")

    def _trustworthy_cuts(self, slices, target_ms: int, index: LogTimeIndex, now: int) -> dict[int, bool]:
        """A cut at T proves "next record >= T" only if the next data record really is at or past
        T (the index may have answered with a transaction marker stamped later than the records
        behind it) and is not a future outlier, which breaks the bounded out-of-orderness the
        bound relies on. The records after every cut are asked for at once."""
        following = find_next_records(index, {p: planned.end for p, planned in slices.items() if planned.cut_at_target})
        cuts = {}
        for p in slices:
            record = following.get(p)
            cuts[p] = (
                record is not None
                and target_ms <= record.timestamp_ms
                and record.timestamp_ms - now <= self._max_future_skew_ms
            )
        return cuts

    def _raise_to_record(
        self, watermark: PartitionWatermark, following: LoggedRecord | None, log_end: int | None, now: int
    ) -> int | None:
        """Raise W_p by ``following``, the partition's next data record (from the index: None when
        there is none). A record at or past ``log_end`` is not readable in this plan and proves
        nothing (``log_end`` None: a held partition, whose next record is its next even though it
        cannot be read yet). When the record is beyond the future guard (it will be quarantined, so its
        timestamp proves nothing), return the end offset of a slice that reads up to and
        including it alone; otherwise None."""
        if following is None or (log_end is not None and following.offset >= log_end):
            return None
        if following.timestamp_ms - now > self._max_future_skew_ms:
            return following.offset + 1
        watermark.on_next_record_at_least(following.timestamp_ms)
        return None

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)


def _records_read(index: LogTimeIndex, before: SourceState, after: SourceState) -> int:
    """Records the step from ``before`` to ``after`` reads, over all partitions, as the log
    counts them (tidemark.log_position.records_between)."""
    return records_read(index, before.positions(), after.positions())


def partition_watermark_after(
    state: PartitionState, max_valid_event_time_ms: int | None, max_out_of_orderness_ms: int
) -> int | None:
    """W_p once a batch planned as ``state`` is persisted: raised by the largest valid event time
    it admitted and by the time-index bound of its slice. The persist job reports this back to
    the planner; a rejected record has no valid event time, so it never moves W_p."""
    return watermark_after(
        state.watermark_ms, state.next_record_at_least_ms, max_valid_event_time_ms, max_out_of_orderness_ms
    )


def watermark_after(
    watermark_ms: int | None,
    next_record_at_least_ms: int | None,
    max_valid_event_time_ms: int | None,
    max_out_of_orderness_ms: int,
) -> int | None:
    """W_p after a slice: W_p before it (``watermark_ms``) raised by the largest valid event time
    it admitted and, when it was cut at T, by "the next record is >= T"."""
    watermark = PartitionWatermark(max_out_of_orderness_ms, watermark_ms)
    if max_valid_event_time_ms is not None:
        watermark.on_event(max_valid_event_time_ms)
    if next_record_at_least_ms is not None:
        watermark.on_next_record_at_least(next_record_at_least_ms)
    return watermark.current_ms


def _global_watermark(
    previous: SourceState,
    watermarks: Mapping[int, PartitionWatermark],
    statuses: Mapping[int, PartitionStatus],
    ends_now: Mapping[int, int],
    held: frozenset[int],
):
    """G as the last batch left it, and a function that folds the partitions' watermarks, as
    they are raised, into it (tidemark.global_watermark). A partition with unread records and no
    W_p holds G; when every partition is IDLE, those whose last batch's records are folded in now
    give G their final W_p."""
    unread = {p for p, state in previous.partitions.items() if state.position < ends_now[p]} | held
    just_read = {p for p, state in previous.partitions.items() if watermarks[p].current_ms != state.watermark_ms}
    global_watermark = GlobalWatermark(previous.global_watermark_ms)

    def fold_global_watermark() -> int | None:
        return global_watermark.update({p: w.current_ms for p, w in watermarks.items()}, statuses, unread, just_read)

    return global_watermark, fold_global_watermark


def _nothing_new(
    previous: SourceState, ends: Mapping[int, int], g: int | None, partitions: Mapping[int, PartitionState]
) -> bool:
    """No position moved, G did not, and no partition's status or open transaction changed. An
    open transaction seen, gone or turned into a hold is news worth a (possibly empty) batch: its
    ledger row is how the hold is reported, and its offset keeps the clock."""
    return (
        ends == previous.positions()
        and g == previous.global_watermark_ms
        and all(
            (partitions[p].status, partitions[p].open_transaction) == (s.status, s.open_transaction)
            for p, s in previous.partitions.items()
        )
    )
