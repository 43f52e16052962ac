"""One way to run log → decode → route → Delta for a stream: live, backfill and recovery.

The three differ only in what a ``PersistRun`` says: the mode, the trigger, and for the bounded
modes the offset ranges and the G they are routed under. Everything else — the reader
(spark_jobs.log_source), the decoder, the routing and the writer (spark_jobs.persist.batch) —
is the same code, so a record is decoded and routed the same way whichever job reads it.
"""

from __future__ import annotations

import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import msgspec

from tidemark.crash_points import CrashPoint
from tidemark.event_time_text import format_event_time, format_optional_event_time
from tidemark.persist_run_summary import PersistRunSummary
from tidemark.stream_config import StreamConfig

log = logging.getLogger("tidemark.persist")

PERSIST_RUN_MODES = ("live", "backfill", "recovery")
TRIGGERS = ("available_now", "continuous")


@dataclass(frozen=True)
class PersistRun:
    """One run of the pipeline.

    ``offset_bounds`` ({partition: (start, end)}, end exclusive) limits a bounded run to those
    offsets; ``pinned_global_watermark_ms`` routes the whole run under that G (recovery: the G
    the live job had, so nothing recovered moves it). ``frozen_partitions`` is the chaos switch
    (see ``frozen_partitions_from_environment``). ``checkpoint`` is the Spark checkpoint folder.
    ``shadow`` writes to the stream's shadow table set of that name instead of its tables
    (a backfill compared with live). The bounded modes route the offsets live covered under
    the G live routed them under (tidemark.live_routing), read from the stream's own ledger.
    ``crash_points``: a test's controlled crashes and pauses (tidemark.crash_points), none in production.
    """

    mode: str
    trigger: str
    checkpoint: str
    max_records_per_batch: int
    align: bool = True
    offset_bounds: dict[int, tuple[int, int]] | None = None
    pinned_global_watermark_ms: int | None = None
    frozen_partitions: tuple[int, ...] = ()
    shadow: str | None = None
    crash_points: tuple[CrashPoint, ...] = ()
    # The most batches this run plans (persist.max_batches_per_run, live available_now runs
    # only; the batch that registers new partitions is not counted); None: all the log holds.
    max_batches: int | None = None
    # A test's chaos switch for Kinesis: the fraction of GetRecords calls answered with a
    # throttling error (0 in production; TIDEMARK_CHAOS_THROTTLE, see throttling_from_environment).
    injected_throttling: float = 0.0

    def __post_init__(self):
        if self.mode not in PERSIST_RUN_MODES:
            raise ValueError(f"mode must be one of {PERSIST_RUN_MODES}, got {self.mode!r}")
        if self.trigger not in TRIGGERS:
            raise ValueError(f"trigger must be one of {TRIGGERS}, got {self.trigger!r}")
        if (self.mode == "live") == (self.offset_bounds is not None):
            raise ValueError("the live mode reads whole partitions; backfill and recovery need offset_bounds")
        if self.shadow is not None and self.mode != "backfill":
            raise ValueError("only a backfill writes to a shadow table set")
        if self.max_batches is not None and (self.mode, self.trigger) != ("live", "available_now"):
            raise ValueError("only a live available_now run ends after max_batches: the others end where they must")


def frozen_partitions_from_environment(stream: StreamConfig, environ=os.environ) -> tuple[int, ...]:
    """The chaos switch, off unless set: ``TIDEMARK_CHAOS_FREEZE=<stream>:<partition>[,...]``
    (or the file ``TIDEMARK_CHAOS_FREEZE_FILE`` names, tidemark.chaos_freeze) freezes those
    partitions of that stream in the live source (it reads nothing from them)."""
    from tidemark.chaos_freeze import chaos_freeze_setting

    setting = chaos_freeze_setting(environ)
    if not setting:
        return ()
    frozen = set()
    for item in setting.split(","):
        name, _, partition = item.strip().partition(":")
        if not partition.isdigit():
            raise ValueError(f"TIDEMARK_CHAOS_FREEZE must be <stream>:<partition>[,...], got {setting!r}")
        if name == stream.name:
            # A Kafka topic's partitions are 0..n-1; a Kinesis stream's shards are numbered by
            # their ids and change with resharding: the source ignores a frozen shard it lacks.
            known = stream.source.fixed_partitions
            if known is not None and int(partition) not in known:
                raise ValueError(f"TIDEMARK_CHAOS_FREEZE: stream {name!r} has no partition {partition}")
            frozen.add(int(partition))
    return tuple(sorted(frozen))


def check_source_supported(stream: StreamConfig) -> None:
    """Refuse, naming the key, what the source cannot do yet, before any work (e.g. a Kinesis
    shard has no position before its first record, so starting from the tip needs a reading the
    source does not do yet)."""
    unsupported = stream.source.unsupported_setting()
    if unsupported is not None:
        raise ValueError(f"streams.{stream.name}.source.{unsupported}")


def throttling_from_environment(stream: StreamConfig, environ=os.environ) -> float:
    """The throttling chaos switch, off unless set: ``TIDEMARK_CHAOS_THROTTLE=<stream>:<fraction>``
    makes the Kinesis source refuse that fraction of its GetRecords calls as Kinesis does when a
    shard's read limit is exceeded (the job must slow down and lose nothing)."""
    setting = environ.get("TIDEMARK_CHAOS_THROTTLE", "").strip()
    if not setting:
        return 0.0
    name, _, fraction = setting.partition(":")
    try:
        value = float(fraction)
    except ValueError:
        value = -1.0
    if not 0.0 <= value < 1.0:
        raise ValueError(f"TIDEMARK_CHAOS_THROTTLE must be <stream>:<fraction in [0, 1)>, got {setting!r}")
    return value if name == stream.name else 0.0


def source_options(
    stream: StreamConfig,
    run: PersistRun,
    feedback_dir: str,
    resume_from: dict | None = None,
    routing=None,
    read_tasks: int = 1,
    accepted_losses: tuple[tuple[int, int, int], ...] = (),
):
    """The source's options for ``run`` of ``stream``: built here once, from the typed config.
    The source decodes what it reads (spark_jobs.log_source.decode_stage), routing the offsets live covered
    under live's G when ``routing`` (tidemark.live_routing.LiveRouting) is given. ``read_tasks``
    is used when the stream does not set source.read_tasks (the cluster's parallelism)."""
    import msgspec

    from spark_jobs.log_source.decode_stage import DecodeSpec
    from spark_jobs.log_source.options import LogSourceOptions

    tolerances = stream.event_time
    decode = DecodeSpec(
        stream.payload,
        tolerances.max_future_skew_ms,
        tolerances.allowed_lateness_ms,
        routing.ranges() if routing else (),
        positions=stream.source.position_type,
    )
    connection = stream.source.connection()
    if run.injected_throttling:
        if not hasattr(connection, "injected_throttling"):
            raise ValueError(f"TIDEMARK_CHAOS_THROTTLE: the log of stream {stream.name!r} is never throttled")
        connection = msgspec.structs.replace(connection, injected_throttling=run.injected_throttling)
    return LogSourceOptions(
        connection=connection,
        starting=stream.source.starting,
        max_records_per_batch=run.max_records_per_batch,
        max_batches=run.max_batches,
        alignment=run.align and stream.source.log_timestamp_is_event_time,
        max_out_of_orderness_ms=tolerances.max_out_of_orderness_ms,
        max_drift_ms=tolerances.max_drift_ms,
        idle_timeout_ms=tolerances.idle_timeout_ms,
        max_future_skew_ms=tolerances.max_future_skew_ms,
        feedback_dir=feedback_dir,
        offset_bounds=run.offset_bounds,
        pinned_global_watermark_ms=run.pinned_global_watermark_ms,
        resume_from=resume_from,
        frozen_partitions=run.frozen_partitions,
        decode=decode,
        accepted_losses=accepted_losses,
        read_tasks=stream.source.read_tasks or read_tasks,
        max_partitions=stream.source.max_partitions,
    )


def run_pipeline(spark, stream: StreamConfig, run: PersistRun, progress=None) -> PersistRunSummary:
    """Run ``run`` to its end (available_now) or until stopped (continuous); returns its summary:
    batches, G, the hours it sealed, the event hours it wrote, how it started. ``progress`` is
    called after every batch (see PersistBatch). The caller has checked the topic against
    source.max_partitions (``check_topic_partitions``) before it started Spark."""
    from spark_jobs.crash_switch import CrashSwitch
    from spark_jobs.lake.claims_table import ClaimsTable
    from spark_jobs.lake.tables import FIRST_NEEDED, TABLES, LakeTables
    from spark_jobs.log_source.retention_stop import clear_lost_ranges
    from spark_jobs.persist.batch import QueryIdentity
    from spark_jobs.schema_following import follow_registry
    from tidemark.accepted_loss import accepted_from

    started = time.monotonic()
    stream = follow_registry(stream)  # a stream that follows its registry: its columns as of now
    source = log_source(stream)
    spark.dataSource.register(source)
    tables = LakeTables(spark, stream, shadow=run.shadow)
    # Live's decisions are in the stream's own ledger, also when this run writes a shadow set.
    routing = LakeTables(spark, stream).live_routing(run.offset_bounds) if run.offset_bounds is not None else None
    claims = ClaimsTable(spark, LakeTables(spark, stream))
    crash = CrashSwitch(run.crash_points, jvm_pid=lambda: spark._jvm.java.lang.ProcessHandle.current().pid())
    ledger_existed = tables.exists("ledger")
    # Creating or checking the tables is a fresh JVM's first Delta work (10-14 s for the six
    # tables of a new lake on 2 cores, the first one the slowest): it runs while the query
    # starts. The first batch waits only for the tables it touches before its events are
    # written (FIRST_NEEDED); it reads and writes them while the others are made.
    preparing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tidemark-tables")
    first_tables_ready = preparing.submit(tables.ensure, FIRST_NEEDED)
    the_rest = tuple(table for table in TABLES if table not in FIRST_NEEDED)
    tables_ready = preparing.submit(lambda: first_tables_ready.result() | tables.ensure(the_rest))
    start = _run_start(spark, stream, run, tables, claims, crash, tables_ready, ledger_existed, routing)
    _say_frozen(stream, run)
    feedback_dir = _feedback_dir(stream, run)
    clear_lost_ranges(feedback_dir)
    options = source_options(
        stream,
        run,
        feedback_dir,
        start.resumed.state.to_offset(stream.source.log_name) if start.resumed else None,
        start.routing,
        read_tasks=spark.sparkContext.defaultParallelism,
        # Live passes over the ranges a person accepted as lost (tidemark.accepted_loss), and no others.
        accepted_losses=accepted_from(tables.accepted_losses()) if run.mode == "live" and ledger_existed else (),
    )
    raw = spark.readStream.format(source.name()).options(**options.to_options()).load()
    identity = QueryIdentity()
    persist_batch = _persist_batch(
        spark,
        stream,
        run,
        tables,
        claims,
        crash,
        first_tables_ready,
        tables_ready,
        start,
        feedback_dir,
        ledger_existed,
        identity,
        progress,
    )
    try:
        query, startup_s = _run_query(spark, stream, run, raw, persist_batch, identity, feedback_dir, started)
    finally:
        preparing.shutdown()
    tables_ready.result()  # a run without a batch still leaves the tables (checks read them), or says why not
    if start.claim is not None:
        _release(claims, start.claim, run, persist_batch.read_to, stream)
    summary = _summary(stream, run, tables, persist_batch, query, start.resumed is not None)
    if run.max_batches is not None and persist_batch.batches >= run.max_batches:
        # The source planned no more (spark_jobs.log_source.reader): what is left is the next run's.
        log.info({"event": "run_budget_spent", "stream": stream.name, "batches": persist_batch.batches})
    log.info(
        {
            "event": "query_finished",
            **msgspec.to_builtins(summary),
            "seconds": _time_spent(startup_s, time.monotonic() - started, query.recentProgress),
        }
    )
    return summary


@dataclass(frozen=True)
class _RunStart:
    """Where a run starts: ``resumed`` (tidemark's lake resume of a live run without a checkpoint,
    or None), ``routing`` (tidemark.live_routing.LiveRouting: the G live covered each offset
    under, for a bounded run; its claim's routing once it claimed; None for live) and the claim
    the run made, released when it ends."""

    resumed: object | None
    routing: object | None
    claim: object | None = None  # spark_jobs.lake.claims_table.Claim of a recovery or backfill


def _run_start(
    spark, stream, run: PersistRun, tables, claims, crash, tables_ready, ledger_existed: bool, routing
) -> _RunStart:
    """A live run without offsets in its checkpoint resumes from the lake's ledger; a recovery or
    backfill into the stream's own tables claims its offsets first (spark_jobs.persist.claimer),
    and its routing becomes its claim's. ``routing``: what live's ledger says of the run's bounds."""
    from spark_jobs.persist.lake_resume import resume_from_lake
    from spark_jobs.streaming_checkpoint import checkpoint_has_offsets
    from tidemark.live_routing import LiveRouting

    resumed, claim = None, None
    # Only a ledger that was there can hold a position to resume from (a fresh one would cost
    # seconds, the session's first Delta queries, for a known answer).
    if run.mode == "live" and ledger_existed and not checkpoint_has_offsets(spark, run.checkpoint):
        tables_ready.result()  # the resume reads the ledger: in its current layout
        resumed = resume_from_lake(spark, tables, now_ms=int(time.time() * 1000))
    if run.mode != "live" and run.shadow is None:
        from spark_jobs.persist.claimer import claim_offsets

        tables_ready.result()  # the claim goes into the claims table
        claim = claim_offsets(spark, stream, run.mode, run.offset_bounds, tables, claims, routing)
        crash.committed("claims", batch_level=False)
        routing = LiveRouting(claim.routing)
    return _RunStart(resumed, routing, claim)


def _release(claims, claim, run: PersistRun, read_to: dict[int, int], stream: StreamConfig) -> None:
    """Release the run's claim when its batches wrote every claimed offset (then the maintenance
    job may settle it: tidemark.claims_settlement); a run that failed never gets here, and one
    that ended short of its bounds keeps its claim (settled once another run writes the rest)."""
    short = {
        p: [read_to.get(p), end] for p, (start, end) in sorted(run.offset_bounds.items()) if read_to.get(p, start) < end
    }
    if short:
        log.warning({"event": "claim_kept", "stream": stream.name, "mode": run.mode, "read_to_of_bound": short})
        return
    claims.release(claim)


def _say_frozen(stream: StreamConfig, run: PersistRun) -> None:
    if run.frozen_partitions:
        log.warning(
            {
                "event": "chaos_freeze",
                "stream": stream.name,
                "partitions": list(run.frozen_partitions),
                "detail": "TIDEMARK_CHAOS_FREEZE is set: these partitions are not read (a stall made on purpose)",
            }
        )


def _persist_batch(
    spark,
    stream,
    run: PersistRun,
    tables,
    claims,
    crash,
    first_tables_ready,
    tables_ready,
    start: _RunStart,
    feedback_dir: str,
    ledger_existed: bool,
    identity,
    progress,
):
    """The foreachBatch writer of the run (spark_jobs.persist.batch.PersistBatch); a live run's
    batches pass the overlap guard (no offset written twice by live and a claimer), and every
    run's batches leave out the erased records."""
    from spark_jobs.lake.erasures_table import ErasuresTable
    from spark_jobs.lake.overlap_guard import OverlapGuard
    from spark_jobs.lake.tables import LakeTables
    from spark_jobs.persist.batch import PersistBatch
    from spark_jobs.streaming_checkpoint import pending_batch

    resumed = start.resumed
    guard = None
    if run.mode == "live":
        guard = OverlapGuard(
            tables, claims, resumed.written_beyond_ledger if resumed else None, ledger_created=not ledger_existed
        )
    return PersistBatch(
        stream,
        tables,
        identity,
        mode=run.mode,
        feedback_dir=feedback_dir,
        guard=guard,
        progress=progress,
        # A shadow set belongs to the backfill that created it (spark_jobs/replay/backfill.py refuses to
        # reuse one): appending is exactly-once there, and cheaper than a MERGE.
        sole_writer=run.shadow is not None,
        sealed_through_ms=resumed.sealed_global_watermark_ms if resumed else None,
        checkpoint=run.checkpoint,
        replayed_batch=pending_batch(spark, run.checkpoint),
        first_tables_ready=first_tables_ready,
        tables_ready=tables_ready,
        crash=crash,
        # The stream's erased records, which no job writes again, into its tables or a shadow set.
        erasures=ErasuresTable(spark, LakeTables(spark, stream)),
    )


def _run_query(
    spark, stream: StreamConfig, run: PersistRun, raw, persist_batch, identity, feedback_dir: str, started: float
):
    """Start the query and wait for its end; returns it and its start-up time (s). The live
    driver beats while its query runs, the first beat before any batch is planned: a recovery or
    backfill meeting its batch in flight knows whether it can still commit. A query stopped by
    a retention loss fails naming the lost ranges."""
    from spark_jobs.persist.driver_beat import DriverBeatWriter

    writer = (
        raw.writeStream.queryName(f"tidemark_{run.mode}_{stream.name}")
        .foreachBatch(persist_batch)
        .option("checkpointLocation", run.checkpoint)
    )
    if run.trigger == "available_now":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{stream.persist.trigger_interval_ms} milliseconds")
    beat = (
        DriverBeatWriter(spark, run.checkpoint, stream.persist.driver_beat_interval_ms) if run.mode == "live" else None
    )
    try:
        if beat is not None:
            beat.start()
        query = writer.start()
        startup_s = time.monotonic() - started
        identity.set(query.id)
        log.info(
            {
                "event": "query_started",
                "stream": stream.name,
                "mode": run.mode,
                "trigger": run.trigger,
                "query_id": query.id,
            }
        )
        try:
            query.awaitTermination()
        except Exception:
            _raise_retention_loss(stream, feedback_dir)
            raise
    finally:
        if beat is not None:
            beat.stop()
    return query, startup_s


def _summary(stream: StreamConfig, run: PersistRun, tables, persist_batch, query, resumed: bool) -> PersistRunSummary:
    """What the run did, from its own batches' commits."""
    global_watermark_ms = persist_batch.global_watermark_ms
    if global_watermark_ms is None and run.mode == "live":
        # A run that persisted no batch leaves G where it was: say where, not "None".
        global_watermark_ms = tables.last_live_global_watermark_ms()
    return PersistRunSummary(
        stream=stream.name,
        mode=run.trigger if run.mode == "live" else run.mode,
        query_id=str(query.id),
        batches=persist_batch.batches,
        global_watermark=format_optional_event_time(global_watermark_ms),
        sealed_hours=tuple(format_event_time(hour) for hour in sorted(set(persist_batch.sealed_hours))),
        event_hours=tuple(format_event_time(hour) for hour in sorted(persist_batch.event_hours)),
        insert_only_batches=persist_batch.insert_only_batches,
        inserted=persist_batch.inserted_rows,
        commit_conflicts_retried=persist_batch.conflicts_retried,
        resumed_from_ledger=resumed,
        # A log that throttles (Kinesis) counts the calls it backed off from (never failed): a
        # throttled run and a slow one look alike otherwise. None: the log does not throttle.
        throttled_calls=_source_report(query.recentProgress).get("throttled_calls"),
    )


def _source_report(progress) -> dict:
    """What the source said of itself in the newest progress report (its reportLatestOffset), or {}."""
    import json

    for report in reversed(progress or []):
        for source in report.sources or []:
            text = source.latestOffset
            try:
                value = json.loads(text) if isinstance(text, str) else text
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return {}


def _raise_retention_loss(stream: StreamConfig, feedback_dir: str) -> None:
    """Raise RetentionLossError, with the exact ranges, when the query failed because the source
    stopped for offsets retention took (spark_jobs.log_source.retention_stop); else return."""
    from spark_jobs.log_source.retention_stop import read_lost_ranges
    from tidemark.retention_loss import RetentionLossError, retention_loss_message

    lost = read_lost_ranges(feedback_dir)
    if lost:
        raise RetentionLossError(retention_loss_message(stream.source.connection(), lost), lost) from None


def check_topic_partitions(stream: StreamConfig) -> None:
    """Check the topic's partition count against source.max_partitions before any work, Spark's
    start included: a refused job costs a metadata request, not a JVM
    (tidemark.partition_limit.PartitionLimitError names the key and a value that would hold)."""
    from connectors.partitioned_logs import open_log
    from tidemark.partition_limit import check_partition_limit

    log = open_log(stream.source.connection())
    try:
        # Also the start-up check that the log exists and answers (the error names it).
        count = len(log.partition_ids())
    finally:
        log.close()
    check_partition_limit(stream.source.log_name, count, stream.source.max_partitions)


def log_source(stream: StreamConfig):
    """The Spark data source class that reads ``stream``'s log: one for every kind of log."""
    from spark_jobs.log_source.reader import LogSource

    return LogSource


def _time_spent(startup_s: float, total_s: float, progress) -> dict[str, float]:
    """Where a run's time went, in seconds: up to the query's start (tables, resume), planning
    (the source's offsets and Spark's plan), writing (the batch function), the checkpoint's
    write-ahead log and commits, and in all. From Spark's progress of the last 100 triggers."""
    spent = {}
    for phase, keys in (
        ("planning", ("latestOffset", "getBatch", "queryPlanning")),
        ("writing", ("addBatch",)),
        ("checkpoint", ("walCommit", "commitOffsets")),
    ):
        spent[phase] = round(sum((p.durationMs or {}).get(key, 0) for p in progress for key in keys) / 1000, 1)
    return {"startup": round(startup_s, 1), **spent, "total": round(total_s, 1)}


def _feedback_dir(stream: StreamConfig, run: PersistRun) -> str:
    """Where the batches leave W_p for the planner: beside the checkpoint when that is a local
    folder; otherwise on the driver's disk under TIDEMARK_HOME (see spark_jobs.log_source.event_time_feedback),
    in a folder named by a digest of the checkpoint URI. A digest, not ``hash()``: Python salts
    string hashes per process, and a restarted job must find the folder its last run wrote."""
    import hashlib

    checkpoint = run.checkpoint
    if "://" not in checkpoint or checkpoint.startswith("file://"):
        return checkpoint.removeprefix("file://") + "/_tidemark_feedback"
    home = os.environ.get("TIDEMARK_HOME", ".tidemark")
    # 16 hex digits (64 bits): no two checkpoints of one stream and mode meet by chance.
    digest = hashlib.sha256(checkpoint.encode()).hexdigest()[:16]
    return f"{home}/feedback/{stream.name}/{run.mode}/{digest}"
