"""One micro-batch of the persist job: write what the source decoded and routed, seal, and commit.

The source decodes and routes each record under the event-time state it planned the batch under
(spark_jobs.log_source.decode_stage; carried in its range rows, checkpointed with the offsets): a valid
record with event time < G − allowed_lateness goes to ``late`` with the G it met, every other
valid record to ``events``, an invalid one to ``quarantine``. Hours newly sealed by G go to
``seals``. Then the ledger, and last the feedback the planner needs for the next batch (W_p
after this one).

Two ways to write a batch. In one pass (the usual one): events straight from the source, the
range and summary rows observed on the way, late and quarantine read again only when the batch
had any. From a cache: when the batch must be written insert-only (a replay, or its ranges may
hold what another writer wrote) or reads no offset (no empty commit); the cache then serves
every output. Both write the same rows.

Exactly-once: order of the commits: events, late, quarantine, then seals and the ledger side by
side, each a plain append. A crash between two of them is repaired by Spark replaying the
batch, and the replay is the one batch of a run that can find its own rows in the tables: the
checkpoint names it before the run starts (spark_jobs.streaming_checkpoint.pending_batch). It
is written insert-only (records the tables lack, ledger rows if the ledger has none of the
batch's, seals of the hours not sealed yet). The ledger row is the last word for the data:
when it is there, the batch's records are persisted. Its seals may be missing after a crash;
with the checkpoint the replay writes them, without it the next run seals from the newest seal
on (PersistBatch._newly_sealed).
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime

from spark_jobs.crash_switch import CrashSwitch
from spark_jobs.lake.overlap_guard import OverlapGuard
from spark_jobs.lake.tables import LakeTables
from spark_jobs.log_source.event_time_feedback import write_feedback
from spark_jobs.streaming_checkpoint import planned_ranges
from tidemark.accepted_loss import ACCEPTED_LOSS_SLICING
from tidemark.batch_summary import (
    event_hours,
    partition_totals,
    read_batch_summary,
    route_totals,
    watermarks_after_steps,
)
from tidemark.event_time_text import format_optional_event_time
from tidemark.hour_sealer import HourSealer
from tidemark.planned_range import RANGE_ROW, PlannedRange
from tidemark.step_counts import EVENTS, LATE, QUARANTINE, SUMMARY_ROW
from tidemark.stream_config import StreamConfig
from tidemark.table_schemas import SEALS_COLUMNS, ddl, ledger_columns

log = logging.getLogger("tidemark.persist")


class QueryIdentity:
    """The streaming query's id, stable across restarts from the same checkpoint.

    Known only once the query has started, while the first batch may already be running: the
    batch function waits for it (bounded), the job sets it right after ``start()``.
    """

    def __init__(self):
        self._query_id: str | None = None
        self._known = threading.Event()

    def set(self, query_id: str) -> None:
        self._query_id = query_id
        self._known.set()

    def get(self, timeout_s: float = 120.0) -> str:
        if not self._known.wait(timeout_s):
            raise RuntimeError("the streaming query id was never set; the job must call QueryIdentity.set")
        return self._query_id


@dataclass(frozen=True)
class _RecordsWritten:
    """A batch's records written: its planned ranges by partition, the counts per step and the
    totals, whether it wrote insert-only, the offsets it left out for claimers
    ({partition: [(start, end)]}), whether it wrote in one pass from the source, and the erased
    positions it did not write ({partition: [(start, end)]}, see spark_jobs.lake.erasures_table)."""

    ranges: dict[int, PlannedRange]
    step_stats: dict
    totals: dict
    insert_only: bool
    left_out: dict
    one_pass: bool
    erased: dict


class PersistBatch:
    """The ``foreachBatch`` function of the persist job (mode: live, backfill or recovery).

    Exactly-once across jobs: a live batch is a plain append, unless it is ``replayed_batch``
    (the batch the checkpoint shows planned and not committed when the run started) or
    ``guard`` says its ranges overlap offsets another job (recovery, backfill) or a run before a
    lost checkpoint may already have written; then, like every recovery and backfill batch, it
    inserts only the records whose (source_partition, source_offset) none of events, late and
    quarantine holds. A live batch leaves out the offsets a recovery or backfill claimed (the
    ``guard`` knows them; see tidemark.write_claims). Only the live job seals hours: the others
    read ranges behind G and never move it.

    ``sole_writer``: this query is the only writer the tables ever had (a backfill's own shadow
    set), so its replay is all it must guard against and plain appends suffice for the others.
    Its input is the source's decoded rows (spark_jobs.log_source.decode_stage): each says the G it is
    routed under (its step's; for backfill and recovery, live's where live covered it).
    ``progress`` is called after each batch with the batch's planned ranges and its counts
    (records, late, quarantined).

    After a run, ``sealed_hours`` lists the hours (start, ms since the epoch) this run sealed,
    ``global_watermark_ms`` the last G it persisted under, ``event_hours`` the event-time hours
    (start, ms) of the records it wrote, ``batches`` how many batches it persisted and
    ``insert_only_batches`` how many of them it wrote insert-only, ``inserted_rows`` how many rows
    its insert-only commits inserted (their MERGE metrics, so rows another writer had written
    first are not counted) and ``conflicts_retried`` how many of those commits lost to a
    concurrent writer and were run again. ``checkpoint``: the query's
    checkpoint, where a batch's planned ranges are read before it is written (see
    spark_jobs.streaming_checkpoint). ``tables_ready``: the tables' creation, still under way
    when the query starts; every batch waits for it before it writes anything but its events,
    and for ``first_tables_ready`` (the tables it touches before: spark_jobs.lake.tables.FIRST_NEEDED)
    before it starts. ``crash``: the test's crash point
    (tidemark.crash_points), told of each batch and each commit.
    """

    def __init__(
        self,
        stream: StreamConfig,
        tables: LakeTables,
        identity: QueryIdentity,
        mode: str = "live",
        feedback_dir: str | None = None,
        guard: OverlapGuard | None = None,
        progress=None,
        sole_writer: bool = False,
        sealed_through_ms: int | None = None,
        checkpoint: str | None = None,
        replayed_batch: int | None = None,
        tables_ready: Future | None = None,
        first_tables_ready: Future | None = None,
        crash: CrashSwitch | None = None,
        erasures=None,
    ):
        self._stream = stream
        self._tables = tables
        self._identity = identity
        self._mode = mode
        self._feedback_dir = feedback_dir
        self._guard = guard
        self._progress = progress
        self._sole_writer = sole_writer
        self._sealer = HourSealer(stream.event_time.allowed_lateness_ms)
        self._sealed_through_ms = sealed_through_ms
        self.sealed_hours: list[int] = []
        self.global_watermark_ms: int | None = None
        self.event_hours: set[int] = set()
        self.insert_only_batches = 0
        self.inserted_rows = 0
        self.conflicts_retried = 0
        self.batches = 0
        self.read_to: dict[int, int] = {}  # per partition, the end of the furthest range a batch wrote
        self._checkpoint = checkpoint
        self._replayed_batch = replayed_batch
        self._tables_ready = tables_ready
        self._first_tables_ready = first_tables_ready or tables_ready
        self._crash = crash or CrashSwitch(None)
        self._erasures = erasures
        self._tables_waited_s = 0.0  # this batch's wait for its tables (s)

    def __call__(self, raw, micro_batch_id: int) -> None:
        started = time.monotonic()
        self._tables_waited_s = 0.0
        self._wait_for_tables(self._first_tables_ready)
        writer = f"tidemark:{self._stream.name}:{self._mode}:{self._identity.get()}"
        self._crash.batch_started()
        replay = micro_batch_id == self._replayed_batch
        records_started, waited_before = time.monotonic(), self._tables_waited_s
        written = self._write_records(raw, writer, micro_batch_id, replay)
        records_s = time.monotonic() - records_started - (self._tables_waited_s - waited_before)
        batch = next(iter(written.ranges.values()))
        stats = partition_totals(written.step_stats)
        sealed = self._newly_sealed(batch, written.ranges) if self._mode == "live" else []
        self._wait_for_tables()  # the seals and the ledger
        commits_started = time.monotonic()
        watermarks = self._commit_seals_and_ledger(raw.sparkSession, written, sealed, writer, micro_batch_id, replay)
        commits_s = time.monotonic() - commits_started
        if self._feedback_dir:
            write_feedback(self._feedback_dir, batch.plan_seq, watermarks)
        # Where the batch's time went (s): waiting for its tables to be made (a new lake's first
        # batch), its records (the source's read and decode inside the events write, and the
        # late and quarantine writes: read_and_write), its seals and ledger commits.
        phases = {
            "tables_wait": round(self._tables_waited_s, 2),
            "read_and_write": round(records_s, 2),
            "seals_and_ledger": round(commits_s, 2),
        }

        self.batches += 1
        for partition, planned in written.ranges.items():
            self.read_to[partition] = max(self.read_to.get(partition, planned.end_offset), planned.end_offset)
        self.sealed_hours.extend(sealed)
        self.global_watermark_ms = batch.global_watermark_ms
        self.event_hours.update(event_hours(stats))
        self.insert_only_batches += int(written.insert_only)
        if self._progress is not None:
            self._progress(written.ranges, written.totals)
        seconds = time.monotonic() - started
        log.info(self._persisted_line(written, stats, sealed, micro_batch_id, replay, seconds, phases))

    def _write_records(self, raw, writer: str, micro_batch_id: int, replay: bool) -> _RecordsWritten:
        """Decide how the batch writes (plain append, insert-only, what it leaves out for claimers)
        and write its records into events, late and quarantine."""
        planned = planned_ranges(raw.sparkSession, self._checkpoint, micro_batch_id) if self._checkpoint else None
        left_out = self._left_out(planned)
        erased = self._erased(planned)
        insert_only = self._insert_only(planned, replay, left_out)
        if left_out is not None and insert_only is not None:
            self._crash.decided()  # else decided once the batch's ranges are read (_write_from_cache)
        # In one pass only a plain append of a batch that reads offsets and leaves none out: a
        # write from the source commits even when the batch holds no record, where the cached
        # path skips the commit.
        one_pass = (
            insert_only is False
            and left_out == {}
            and erased == {}
            and (planned is None or any(r.end_offset > r.start_offset for r in planned))
        )
        if one_pass:
            ranges, step_stats, totals = self._write_in_one_pass(raw, writer)
        else:
            ranges, step_stats, totals, insert_only, left_out, erased = self._write_from_cache(
                raw, writer, insert_only, left_out, erased
            )
        return _RecordsWritten(ranges, step_stats, totals, insert_only, left_out, one_pass, erased)

    def _commit_seals_and_ledger(
        self, spark, written: _RecordsWritten, sealed: list[int], writer: str, micro_batch_id: int, replay: bool
    ) -> dict:
        """Commit the batch's seals (when it sealed hours) and its ledger rows; returns the
        partitions' watermarks after the batch, the feedback for the next plan."""
        batch = next(iter(written.ranges.values()))
        ledger, watermarks = self._ledger(spark, written.ranges, written.step_stats, writer)
        commits = [(self._seals(spark, sealed, batch, micro_batch_id=micro_batch_id), "seals")] if sealed else []
        commits.append((ledger, "ledger"))
        if replay:
            commits = self._not_yet_committed(commits, writer, written.ranges, sealed)
        # Seals and the ledger side by side: neither waits for the other (a crash between them is
        # repaired by the replay, or after a lost checkpoint by sealing from the newest seal, see
        # _newly_sealed). A crash point at one of them commits that one alone first: the other is
        # the commit the crash loses.
        crash_at = self._crash.armed_for_this_batch
        if crash_at in ("seals", "ledger"):
            for frame, table in sorted(commits, key=lambda commit: commit[1] != crash_at):
                self._append(frame, table, writer)
        else:
            with ThreadPoolExecutor(max_workers=2) as pool:
                done = [pool.submit(self._append, frame, table, writer) for frame, table in commits]
            for commit in done:
                commit.result()
        return watermarks

    def _persisted_line(
        self,
        written: _RecordsWritten,
        stats,
        sealed: list[int],
        micro_batch_id: int,
        replay: bool,
        seconds: float,
        phases: dict[str, float],
    ) -> dict:
        """The batch's ``batch_persisted`` log line: what a person reads of it."""
        ranges, left_out = written.ranges, written.left_out
        batch = next(iter(ranges.values()))
        return {
            "event": "batch_persisted",
            "stream": self._stream.name,
            "mode": self._mode,
            "micro_batch_id": micro_batch_id,
            # The ledger counts aligned steps, Spark micro-batches: say which steps this one packed.
            "step_ids": _first_and_last_step(ranges),
            **written.totals,
            # A wide topic's batch reads few of its partitions: say how many, of how many.
            "partitions_read": f"{sum(1 for planned in ranges.values() if planned.reads)} of {len(ranges)}",
            "global_watermark": format_optional_event_time(batch.global_watermark_ms),
            "sealed_hours": [format_optional_event_time(h) for h in sealed],
            "slicing": batch.slicing,
            **({"aligned_steps": len(batch.steps)} if len(batch.steps) > 1 else {}),
            **({"insert_only": True} if written.insert_only else {}),
            # Offsets of this batch a recovery or backfill claimed: theirs to write.
            **(
                {"left_out": {str(p): [list(span) for span in spans] for p, spans in left_out.items()}}
                if left_out
                else {}
            ),
            # Erased records read again: not written (tidemark erase).
            **({"erased": sum(e - s for spans in written.erased.values() for s, e in spans)} if written.erased else {}),
            **({"replayed": True} if replay else {}),
            **({} if written.one_pass else {"cached": True}),
            **(_offsets_without_data(ranges, stats) if self._tables.positions.dense else {}),
            **_held_by_open_transaction(ranges),
            "seconds": round(seconds, 2),
            "seconds_by_phase": phases,
        }

    def _newly_sealed(self, batch: PlannedRange, ranges: dict[int, PlannedRange]) -> list[int]:
        """The hours this batch seals: those its steps' Gs close after the G before it. The first
        batch after a resume from the lake starts from the newest seal's G instead when that is
        behind: the seals and the ledger commit side by side, so a crash can leave the ledger's
        last batch without its seals, and only the seals table knows it."""
        previous = batch.previous_global_watermark_ms
        resumed_from, self._sealed_through_ms = self._sealed_through_ms, None
        if resumed_from is not None and (previous is None or resumed_from < previous):
            previous = resumed_from
        return self._sealer.newly_sealed_by_steps(previous, _step_watermarks(ranges))

    def _insert_only(self, planned: list[PlannedRange] | None, replay: bool, left_out: dict | None) -> bool | None:
        """Whether this batch must be written insert-only, decided before it is read; None when
        that needs its ranges (a checkpoint's first batch, ``planned`` None, while another
        writer's ranges or a resumed zone exist). Insert-only: a ``replay``, a recovery or
        backfill batch (but a sole writer's), a live batch whose ``planned`` ranges (from the
        checkpoint, see spark_jobs.streaming_checkpoint) overlap another writer's ranges or a
        resumed zone."""
        if replay:
            return True
        if self._mode != "live":
            return not self._sole_writer
        if self._guard is None:
            return False
        if planned is None:
            return None if self._guard.may_overlap_any() else False
        return self._guard.overlaps(_offset_ranges({r.partition: r for r in planned}), left_out)

    def _left_out(self, planned: list[PlannedRange] | None) -> dict[int, list[tuple[int, int]]] | None:
        """The offsets of this live batch it must not write, the claimed ones, {partition: [(start,
        end)]}; None when that needs the batch's ranges (a checkpoint's first batch while claims
        exist). Recovery and backfill write all they read, insert-only."""
        if self._mode != "live" or self._guard is None:
            return {}
        if planned is None:
            return None if self._guard.may_overlap_any() else {}
        return self._guard.claimed(_offset_ranges({r.partition: r for r in planned}))

    def _erased(self, planned: list[PlannedRange] | None) -> dict[int, list[tuple[int, int]]] | None:
        """The erased positions in this batch's ranges, which no mode writes again
        (spark_jobs.lake.erasures_table), {partition: [(start, end)]}; None when that needs the
        batch's ranges (a checkpoint's first batch while erasures exist)."""
        if self._erasures is None:
            return {}
        if planned is None:
            return None if self._erasures.holds_any() else {}
        return self._erasures.erased(_offset_ranges({r.partition: r for r in planned}))

    def _write_in_one_pass(self, raw, writer: str):
        """Events straight from the source; the ranges and counts observed on the way. Late and
        quarantined records, rare, are read again from the source when there are any."""
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        observation = Observation()
        observed = raw.observe(
            observation,
            F.collect_list(F.when(_is_summary_row(), F.struct("row_kind", "planned_range", "step_counts"))).alias(
                "rows"
            ),
        )
        self._append(_events(_routed(observed, EVENTS), self._stream), "events", writer)
        rows = _observed_rows(observation)
        if rows is None:
            # Spark never handed the metrics over (they ride its listener bus, which a busy
            # driver can hold up): read the range and summary rows on their own.
            log.warning(
                {"event": "observation_missing", "stream": self._stream.name, "detail": "batch summary read again"}
            )
            rows = _summary_rows(raw)
        ranges, step_stats = read_batch_summary(rows)
        totals = route_totals(step_stats)
        self._wait_for_tables()
        self._write_rare_routes(raw, totals, lambda frame, table: self._append(frame, table, writer))
        return ranges, step_stats, totals

    def _write_from_cache(self, raw, writer: str, insert_only: bool | None, left_out: dict | None, erased: dict | None):
        """Decoded once and kept: the ranges first, then each output from the cached rows.
        ``insert_only`` (see _insert_only), ``left_out`` (see _left_out) and ``erased`` (see
        _erased): None: decided here from the ranges. Returns the ranges, the counts, their
        totals, whether the batch was written insert-only, the offsets it left out and the erased
        positions it skipped."""
        from pyspark import StorageLevel

        self._wait_for_tables()  # the rare path: it may write to any of them, insert-only
        decoded = raw.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            ranges, step_stats = read_batch_summary(_summary_rows(decoded))
            totals = route_totals(step_stats)
            offset_ranges = _offset_ranges(ranges)
            deciding_here = left_out is None or insert_only is None
            if left_out is None:
                left_out = self._guard.claimed(offset_ranges)
            if insert_only is None:
                insert_only = self._guard.overlaps(offset_ranges, left_out)
            if erased is None:
                erased = self._erasures.erased(offset_ranges)
            if deciding_here:
                self._crash.decided()
            kept = self._tables.outside(left_out) if left_out else None

            def write(frame, table):
                if kept is not None:
                    frame = frame.where(kept)
                if erased:
                    frame = _without_positions(frame, erased, self._tables.positions)
                if insert_only:
                    outcome = self._tables.insert_missing(frame, table, offset_ranges)
                    self.inserted_rows += outcome.inserted
                    self.conflicts_retried += outcome.conflicts_retried
                    self._crash.committed(table)
                else:
                    self._append(frame, table, writer)

            # A batch with no record for a table makes no commit to it: saves a commit (a
            # fraction of a second) for nothing.
            if totals["records"]:
                write(_events(_routed(decoded, EVENTS), self._stream), "events")
            self._write_rare_routes(decoded, totals, write)
        finally:
            decoded.unpersist()
        return ranges, step_stats, totals, insert_only, left_out, erased

    def _wait_for_tables(self, ready: Future | None = None) -> None:
        """Wait for the tables ``ready`` stands for (default: every table of the set, made
        while the first batch read and wrote its events), counting the wait; raises what went
        wrong creating or upgrading them."""
        ready = ready or self._tables_ready
        if ready is None:
            return
        waiting = time.monotonic()
        try:
            ready.result()
        finally:
            self._tables_waited_s += time.monotonic() - waiting

    def _append(self, frame, table: str, writer: str) -> None:
        """One plain append commit of the batch (see LakeTables.append)."""
        self._tables.append(frame, table, writer)
        self._crash.committed(table)

    def _write_rare_routes(self, decoded, totals: dict, write) -> None:
        """Late records (with the G they met) and quarantined ones, when the batch had any.
        ``write(frame, table)``: how the batch writes."""
        from pyspark.sql import functions as F

        if totals["late"]:
            write(
                _events(
                    _routed(decoded, LATE),
                    self._stream,
                    F.timestamp_millis(F.col("routed_under_ms")).alias("global_watermark"),
                ),
                "late",
            )
        if totals["quarantined"]:
            write(_quarantine(_routed(decoded, QUARANTINE)), "quarantine")

    def _not_yet_committed(
        self, commits: list, writer: str, ranges: dict[int, PlannedRange], sealed: list[int]
    ) -> list:
        """Of a replayed batch's seals and ledger commits, those its crashed run never made:
        the ledger rows when the ledger holds none of the batch's, the seals of the hours the
        seals table lacks."""
        kept = []
        for frame, table in commits:
            if table == "ledger" and self._tables.holds_ledger_steps(writer, _step_ids(ranges)):
                continue
            if table == "seals":
                present = self._tables.sealed_among(sealed)
                if len(present) == len(set(sealed)):
                    continue
                frame = frame.where(~frame.hour.isin([_timestamp(hour) for hour in present])) if present else frame
            kept.append((frame, table))
        return kept

    def _ledger(self, spark, ranges: dict[int, PlannedRange], step_stats: dict, writer: str):
        """The batch's ledger rows and W_p after it per partition (what the planner is told).

        One row per step range of every partition (see PlannedRange.steps), under its step's
        batch id and G. W_p after a step: W_p before it, raised by its records' largest valid
        event time and by its cut at T, and never below W_p after the partition's step before.
        """
        bound = self._stream.event_time.max_out_of_orderness_ms
        positions = self._tables.positions
        rows, watermarks = [], {}
        for partition, planned in sorted(ranges.items()):
            state = planned.state
            hold = state.open_transaction
            watermark = None
            for step, watermark in zip(planned.steps, watermarks_after_steps(planned, step_stats, bound)):
                counts = step_stats.get((partition, step.seq), {})
                rows.append(
                    (
                        self._stream.name,
                        step.seq,
                        partition,
                        self._mode,
                        positions.to_column(step.start),
                        positions.to_column(step.end),
                        positions.to_column(state.log_end),
                        counts.get("records", 0),
                        counts.get("quarantined", 0),
                        counts.get("late", 0),
                        counts.get("data_records", 0),
                        _timestamp(counts.get("min_event_time_ms")),
                        _timestamp(counts.get("max_event_time_ms")),
                        _timestamp(watermark),
                        _timestamp(step.global_watermark_ms),
                        state.status.value,
                        ACCEPTED_LOSS_SLICING if state.accepted_loss else planned.slicing,
                        _timestamp(planned.read_time_ms),
                        _timestamp(hold.since_ms) if hold else None,
                        bool(hold and hold.held),
                        writer,
                    )
                )
            watermarks[partition] = watermark
        # One file a commit: a few rows each (the maintenance run compacts them).
        return spark.createDataFrame(rows, ddl(ledger_columns(positions))).coalesce(1), watermarks

    def _seals(self, spark, hours: list[int], batch: PlannedRange, micro_batch_id: int):
        rows = [
            (
                self._stream.name,
                _timestamp(hour),
                _timestamp(batch.read_time_ms),
                _timestamp(batch.global_watermark_ms),
                micro_batch_id,
            )
            for hour in hours
        ]
        return spark.createDataFrame(rows, ddl(SEALS_COLUMNS)).coalesce(1)


def _is_summary_row():
    """The batch's range and summary rows, as a column condition."""
    from pyspark.sql import functions as F

    return F.col("row_kind").isin(RANGE_ROW, SUMMARY_ROW)


def _summary_rows(decoded) -> list:
    """The range and summary rows of ``decoded`` (row_kind, planned_range, step_counts), read on their own."""
    return decoded.where(_is_summary_row()).select("row_kind", "planned_range", "step_counts").collect()


def _observed_rows(observation, wait_s: float = 5.0) -> list | None:
    """The range and summary rows ``observation`` collected, or None when the write it rode on
    never read its input (Delta skips an append it already holds). Spark hands observed metrics
    over through its listener bus, a moment after the write returns: hence the short wait."""
    future = observation._jo.future()  # PySpark's Observation.get would wait forever
    deadline = time.monotonic() + wait_s
    while not future.isCompleted():
        if time.monotonic() > deadline:
            return None
        time.sleep(0.005)
    return observation.get["rows"]


def _routed(decoded, route: str):
    """The decoded records routed to ``route`` (tidemark.step_counts: EVENTS, LATE, QUARANTINE)."""
    from pyspark.sql import functions as F

    return decoded.where(F.col("route") == route)


def _step_watermarks(ranges: dict[int, PlannedRange]) -> list[int | None]:
    """The G of each aligned step of the batch, in step order (every step has a range in some
    partition: a step that reads nothing is never planned, and the last is in every range)."""
    by_seq = {step.seq: step.global_watermark_ms for planned in ranges.values() for step in planned.steps}
    return [by_seq[seq] for seq in sorted(by_seq)]


def _step_ids(ranges: dict[int, PlannedRange]) -> list[int]:
    """The aligned steps (the ledger's step ids) of the micro-batch, in order."""
    return sorted({step.seq for planned in ranges.values() for step in planned.steps})


def _first_and_last_step(ranges: dict[int, PlannedRange]) -> list[int]:
    """The first and last aligned step (ledger step id) of the micro-batch."""
    seqs = _step_ids(ranges)
    return [seqs[0], seqs[-1]]


def _offset_ranges(ranges: dict[int, PlannedRange]) -> dict[int, tuple[int, int]]:
    """The batch's non-empty offset ranges, {partition: (start, end)}."""
    return {p: (r.start_offset, r.end_offset) for p, r in ranges.items() if r.end_offset > r.start_offset}


def _events(records, stream: StreamConfig, *extra_columns):
    """The events table's columns of ``records`` (decoded rows), then ``extra_columns``."""
    from pyspark.sql import functions as F

    event_time = F.timestamp_millis(F.col("event_time_ms"))
    return records.select(
        F.col("source_partition"),
        F.col("source_offset"),
        F.timestamp_millis(F.col("log_timestamp_ms")).alias("log_timestamp"),
        event_time.alias("event_time"),
        F.col("record_key"),
        F.col("record_headers"),
        *[F.col(field.name) for field in stream.payload.columns],
        F.col("step_id"),
        F.to_date(event_time).alias("event_date"),
        F.hour(event_time).alias("event_hour"),
        *extra_columns,
    )


def _quarantine(records):
    from pyspark.sql import functions as F

    return records.select(
        F.col("source_partition"),
        F.col("source_offset"),
        F.timestamp_millis(F.col("log_timestamp_ms")).alias("log_timestamp"),
        F.col("record_key"),
        F.col("record_headers"),
        F.col("value").alias("raw_value"),
        F.col("reject_reason").alias("reason"),
        F.col("reject_detail").alias("detail"),
        F.col("step_id"),
        F.timestamp_millis(F.col("read_time_ms")).alias("read_time"),
    )


def _offsets_without_data(ranges: dict[int, PlannedRange], stats: dict) -> dict:
    """The batch's offsets that held no data record (markers, aborted, compacted), when any;
    only for dense positions (Kafka offsets): Kinesis sequence numbers are not counts."""
    offsets = sum(planned.offsets for planned in ranges.values())
    records = sum(s["data_records"] for s in stats.values())
    return {"offsets_without_data": offsets - records} if offsets != records else {}


def _held_by_open_transaction(ranges: dict[int, PlannedRange]) -> dict:
    """The partitions an open transaction holds (see tidemark.open_transaction), when any."""
    held = [
        p
        for p, planned in sorted(ranges.items())
        if planned.state.open_transaction and planned.state.open_transaction.held
    ]
    return {"held_by_open_transaction": held} if held else {}


def _timestamp(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC)


def _without_positions(frame, spans: dict[int, list[tuple[int, int]]], positions):
    """``frame`` without the rows at the positions ``spans`` hold ({partition: [(start, end)]}:
    erased records, consecutive positions joined): a join with those positions, which stays one
    cheap step however many a person's records are."""
    from pyspark.sql import functions as F

    keys = [(p, positions.to_column(o)) for p, parts in sorted(spans.items()) for s, e in parts for o in range(s, e)]
    erased = frame.sparkSession.createDataFrame(keys, f"source_partition INT, source_offset {positions.sql_type}")
    return frame.join(F.broadcast(erased), ["source_partition", "source_offset"], "left_anti")
