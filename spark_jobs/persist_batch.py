"""One micro-batch of the persist job: decode, route, seal, and commit.

Routing uses the event-time state the source planned the batch under (carried in its range
rows, checkpointed with the offsets): a valid record with event time < G − allowed_lateness goes
to ``late`` with the G it met, every other valid record to ``events``, an invalid one to
``quarantine``. Hours newly sealed by G go to ``seals``. Then the ledger, and last the feedback
the planner needs for the next batch (W_p after this one).

Order of the commits: events, late, quarantine, seals, then the ledger. Each append is idempotent
per (query id, batch id), so a crash between two of them is repaired by Spark replaying the batch:
the tables already written skip it, the others write it. The ledger row is the last word: when it
is there, the batch is fully persisted.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timezone

from spark_jobs.event_time_feedback import write_feedback
from spark_jobs.lake_tables import LakeTables
from spark_jobs.overlap_guard import OverlapGuard
from tidemark.batch_planner import watermark_after
from tidemark.event_time_text import format_optional_event_time
from tidemark.hour_sealer import HourSealer
from tidemark.planned_range import RECORD_ROW, PlannedRange
from tidemark.stream_config import StreamConfig
from tidemark.table_schemas import LEDGER_COLUMNS, SEALS_COLUMNS, ddl

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


class PersistBatch:
    """The ``foreachBatch`` function of the persist job (mode: live, backfill or recovery).

    Exactly-once across jobs: a live batch is a plain idempotent append, unless ``guard`` says
    its ranges overlap offsets another job (recovery, backfill) or a run before a lost checkpoint
    may already have written; then, like every recovery and backfill batch, it inserts only the
    records whose (source_partition, source_offset) none of events, late and quarantine holds.
    Only the live job seals hours: the others read ranges behind G and never move it.

    ``sole_writer``: this query is the only writer the tables ever had (a backfill's own shadow
    set), so its replays are all it must guard against and idempotent appends suffice.
    Its input is the source's decoded rows (spark_jobs.decode_stage): each says the G it is
    routed under (its step's; for backfill and recovery, live's where live covered it).
    ``progress`` is called after each batch with the batch's planned ranges and its counts
    (records, late, quarantined).

    After a run, ``sealed_hours`` lists the hours (start, ms since the epoch) this run sealed,
    ``global_watermark_ms`` the last G it persisted under, ``event_hours`` the event-time hours
    (start, ms) of the records it wrote, and ``insert_only_batches`` how many batches it wrote
    insert-only.
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
        self.sealed_hours: list[int] = []
        self.global_watermark_ms: int | None = None
        self.event_hours: set[int] = set()
        self.insert_only_batches = 0

    def __call__(self, raw, batch_id: int) -> None:
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        started = time.monotonic()
        app_id = f"tidemark:{self._stream.name}:{self._mode}:{self._identity.get()}"
        # Decoded once and kept: every output derives from it, and reading the log again per
        # output would multiply the Kafka reads.
        decoded = raw.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            allowed_lateness = self._stream.event_time.allowed_lateness_ms
            # tidemark.lateness: late below G − allowed_lateness, G of the record's own step (or
            # live's, see decode_stage); no G yet (the stream's first batches): nothing is.
            is_late = F.coalesce(F.col("event_time_ms") < F.col("routed_under_ms") - F.lit(allowed_lateness), F.lit(False))
            # One pass over the batch: its planned ranges and the counts of each step.
            ranges, step_stats = _batch_summary(decoded, is_late)
            batch = next(iter(ranges.values()))
            g = batch.global_watermark_ms
            valid = decoded.where((F.col("row_kind") == RECORD_ROW) & F.col("reject_reason").isNull())
            stats = _partition_totals(step_stats)
            totals = {key: sum(s[key] for s in stats.values()) for key in ("records", "late", "quarantined")}
            if self._mode == "live":
                insert_only = self._guard is not None and self._guard.overlaps(_offset_ranges(ranges), app_id)
            else:
                insert_only = not self._sole_writer
            write = self._insert_missing(ranges) if insert_only else self._tables.append_once

            # A replay decodes and routes identically, so an empty output stays empty: skipping
            # its commit loses nothing and saves an idempotent commit (about a second) each time.
            if totals["records"]:
                write(_events(valid.where(~is_late), self._stream), "events", app_id, batch_id)
            if totals["late"]:
                late = _events(
                    valid.where(is_late), self._stream, F.timestamp_millis(F.col("routed_under_ms")).alias("global_watermark")
                )
                write(late, "late", app_id, batch_id)
            if totals["quarantined"]:
                write(_quarantine(decoded), "quarantine", app_id, batch_id)
            sealed = (
                self._sealer.newly_sealed_by_steps(batch.previous_global_watermark_ms, _step_watermarks(ranges))
                if self._mode == "live"
                else []
            )
            if sealed:
                self._tables.append_once(self._seals(decoded.sparkSession, sealed, batch, batch_id), "seals", app_id, batch_id)

            ledger, watermarks = self._ledger(decoded.sparkSession, ranges, step_stats, app_id)
            self._tables.append_once(ledger, "ledger", app_id, batch_id)
            if self._feedback_dir:
                write_feedback(self._feedback_dir, batch.plan_seq, watermarks)
        finally:
            decoded.unpersist()
        self.sealed_hours.extend(sealed)
        self.global_watermark_ms = g
        self.event_hours.update(_event_hours(stats))
        self.insert_only_batches += int(insert_only)
        if self._progress is not None:
            self._progress(ranges, totals)
        log.info(
            {
                "event": "batch_persisted",
                "stream": self._stream.name,
                "mode": self._mode,
                "batch_id": batch_id,
                # The ledger counts aligned steps, Spark micro-batches: say which ledger batch ids this was.
                "ledger_batch_ids": _ledger_batch_ids(ranges),
                **totals,
                "global_watermark": format_optional_event_time(g),
                "sealed_hours": [format_optional_event_time(h) for h in sealed],
                "slicing": batch.slicing,
                **({"aligned_steps": len(batch.steps)} if len(batch.steps) > 1 else {}),
                **({"insert_only": True} if insert_only else {}),
                **_offsets_without_data(ranges, stats),
                **_held_by_open_transaction(ranges),
                "seconds": round(time.monotonic() - started, 2),
            }
        )

    def _insert_missing(self, ranges: dict[int, PlannedRange]):
        """A writer like ``append_once`` that skips the records the lake already holds."""
        offset_ranges = _offset_ranges(ranges)

        def write(frame, table: str, app_id: str, version: int) -> None:
            self._tables.insert_missing(frame, table, app_id, version, offset_ranges)

        return write

    def _ledger(self, spark, ranges: dict[int, PlannedRange], step_stats: dict, app_id: str):
        """The batch's ledger rows and W_p after it per partition (what the planner is told).

        One row per step range of every partition (see PlannedRange.steps), under its step's
        batch id and G. W_p after a step: W_p before it, raised by its records' largest valid
        event time and by its cut at T, and never below W_p after the partition's step before.
        """
        bound = self._stream.event_time.max_out_of_orderness_ms
        rows, watermarks = [], {}
        for partition, planned in sorted(ranges.items()):
            state = planned.state
            hold = state.open_transaction
            watermark = None
            for step in planned.steps:
                counts = step_stats.get((partition, step.seq), {})
                after = watermark_after(step.watermark_ms, step.next_record_at_least_ms, counts.get("max_event_time_ms"), bound)
                watermark = after if watermark is None or (after is not None and after > watermark) else watermark
                rows.append(
                    (
                        self._stream.name,
                        step.seq,
                        partition,
                        self._mode,
                        step.start,
                        step.end,
                        state.log_end,
                        counts.get("records", 0),
                        counts.get("quarantined", 0),
                        counts.get("late", 0),
                        counts.get("data_records", 0),
                        _timestamp(counts.get("min_event_time_ms")),
                        _timestamp(counts.get("max_event_time_ms")),
                        _timestamp(watermark),
                        _timestamp(step.global_watermark_ms),
                        state.status.value,
                        planned.slicing,
                        _timestamp(planned.read_time_ms),
                        _timestamp(hold.since_ms) if hold else None,
                        bool(hold and hold.held),
                        app_id,
                    )
                )
            watermarks[partition] = watermark
        return spark.createDataFrame(rows, ddl(LEDGER_COLUMNS)), watermarks

    def _seals(self, spark, hours: list[int], batch: PlannedRange, batch_id: int):
        rows = [
            (self._stream.name, _timestamp(hour), _timestamp(batch.read_time_ms), _timestamp(batch.global_watermark_ms), batch_id)
            for hour in hours
        ]
        return spark.createDataFrame(rows, ddl(SEALS_COLUMNS))


def _batch_summary(decoded, is_late) -> tuple[dict[int, PlannedRange], dict[tuple[int, int], dict]]:
    """One pass over the batch: its planned ranges by partition (from the range rows), and per
    (partition, step's batch id): data records read, persisted, late, quarantined, and the
    min/max valid event time (ms)."""
    from pyspark.sql import functions as F

    record = F.col("row_kind") == RECORD_ROW
    valid = record & F.col("reject_reason").isNull()
    # A range row has no batch_seq and a record row no range_state, so grouping by all three
    # gives the same groups as by the first two; grouping (rather than max(range_state)) keeps a
    # hash aggregate: an aggregate over a string is sort-based, a sort of every row of the batch.
    rows = (
        decoded.groupBy("source_partition", "batch_seq", "range_state")
        .agg(
            F.sum(F.when(valid & ~is_late, 1).otherwise(0)).alias("records"),
            F.sum(F.when(valid & is_late, 1).otherwise(0)).alias("late"),
            F.sum(F.when(record & ~valid, 1).otherwise(0)).alias("quarantined"),
            F.sum(F.when(record, 1).otherwise(0)).alias("data_records"),
            F.min(F.when(valid, F.col("event_time_ms"))).alias("min_event_time_ms"),
            F.max(F.when(valid, F.col("event_time_ms"))).alias("max_event_time_ms"),
        )
        .collect()
    )
    ranges = {}
    step_stats = {}
    for row in rows:
        if row.range_state is not None:
            planned = PlannedRange.from_text(row.range_state)
            ranges[planned.partition] = planned
        else:
            step_stats[(row.source_partition, row.batch_seq)] = row.asDict()
    return ranges, step_stats


def _step_watermarks(ranges: dict[int, PlannedRange]) -> list[int | None]:
    """The G of each aligned step of the batch, in step order (every step has a range in some
    partition: a step that reads nothing is never planned, and the last is in every range)."""
    by_seq = {step.seq: step.global_watermark_ms for planned in ranges.values() for step in planned.steps}
    return [by_seq[seq] for seq in sorted(by_seq)]


def _ledger_batch_ids(ranges: dict[int, PlannedRange]) -> list[int]:
    """The first and last ledger batch id (aligned step) of the micro-batch."""
    seqs = [step.seq for planned in ranges.values() for step in planned.steps]
    return [min(seqs), max(seqs)]


def _partition_totals(step_stats: dict[tuple[int, int], dict]) -> dict[int, dict]:
    """The per-step counts summed per partition (min/max event time: over the steps)."""
    totals: dict[int, dict] = {}
    for (partition, _), counts in step_stats.items():
        total = totals.setdefault(
            partition, {"records": 0, "late": 0, "quarantined": 0, "data_records": 0, "min_event_time_ms": None, "max_event_time_ms": None}
        )
        for key in ("records", "late", "quarantined", "data_records"):
            total[key] += counts[key]
        for key, pick in (("min_event_time_ms", min), ("max_event_time_ms", max)):
            if counts[key] is not None:
                total[key] = counts[key] if total[key] is None else pick(total[key], counts[key])
    return totals


def _offset_ranges(ranges: dict[int, PlannedRange]) -> dict[int, tuple[int, int]]:
    """The batch's non-empty offset ranges, {partition: (start, end)}."""
    return {p: (r.start_offset, r.end_offset) for p, r in ranges.items() if r.end_offset > r.start_offset}


def _event_hours(stats: dict) -> set[int]:
    """The event-time hours (start, ms) the batch's valid records span, per partition min to max."""
    hours = set()
    for partition_stats in stats.values():
        first, last = partition_stats.get("min_event_time_ms"), partition_stats.get("max_event_time_ms")
        if first is not None and last is not None:
            hours.update(range(first - first % 3_600_000, last + 1, 3_600_000))
    return hours


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
        *[F.col(field.name) for field in stream.payload.fields],
        F.col("batch_seq").alias("batch_id"),
        F.to_date(event_time).alias("event_date"),
        F.hour(event_time).alias("event_hour"),
        *extra_columns,
    )


def _quarantine(decoded):
    from pyspark.sql import functions as F

    return decoded.where((F.col("row_kind") == RECORD_ROW) & F.col("reject_reason").isNotNull()).select(
        F.col("source_partition"),
        F.col("source_offset"),
        F.timestamp_millis(F.col("log_timestamp_ms")).alias("log_timestamp"),
        F.col("record_key"),
        F.col("value").alias("raw_value"),
        F.col("reject_reason").alias("reason"),
        F.col("reject_detail").alias("detail"),
        F.col("batch_seq").alias("batch_id"),
        F.timestamp_millis(F.col("read_time_ms")).alias("read_time"),
    )


def _offsets_without_data(ranges: dict[int, PlannedRange], stats: dict) -> dict:
    """The batch's offsets that held no data record (markers, aborted, compacted), when any."""
    offsets = sum(planned.offsets for planned in ranges.values())
    records = sum(s["data_records"] for s in stats.values())
    return {"offsets_without_data": offsets - records} if offsets != records else {}


def _held_by_open_transaction(ranges: dict[int, PlannedRange]) -> dict:
    """The partitions an open transaction holds (see tidemark.open_transaction), when any."""
    held = [p for p, planned in sorted(ranges.items()) if planned.state.open_transaction and planned.state.open_transaction.held]
    return {"held_by_open_transaction": held} if held else {}


def _timestamp(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
