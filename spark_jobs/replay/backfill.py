"""Entry point of the backfill job: an event-time range of a stream, read again from the log.

    spark-submit spark_jobs/replay/backfill.py --request '{"stream": "telemetry", "start_ms": 1763683200000,
        "end_ms": 1763769600000, "partitions": [0, 2], "shadow": null, "compare": false}'
        [--run-name NAME] [--conf conf/streams.yaml] [--result PATH]

``--request`` is a BackfillRequest's JSON (tidemark.backfill_request), decoded by that Struct:
the value the backfill DAG's validate task (or ``tidemark backfill``) made from the params once.
``--result`` receives a BackfillResult or BackfillRefusal (tidemark.backfill_result), which
BackfillOperator decodes.

The log's time index turns [start, end) into offsets per partition (tidemark.backfill_plan);
the range is read by the same pipeline as the live job (spark_jobs.persist.pipeline) in mode
``backfill``: aligned event-time slices, insert-only writes, ledger rows with mode=backfill, and
every record routed under the G live routed it under (tidemark.live_routing). A request without
``shadow`` fills the stream's own tables (nothing the lake holds is written again); one with a
``shadow`` writes that shadow table set, and ``compare`` then compares it with live per partition
and event hour (tidemark.reconciliation). Killed, the same command (same ``--run-name``) resumes
from its checkpoint; a lost checkpoint costs a re-read, never a duplicate.

Retention first: a range wholly past the log's retention is refused before any work; a range
partly past it is backfilled where it can be and the lost part is reported (offsets and
event-time span).

A backfill into events claims its ranges before it writes and settles with the live job's batch
in flight as a recovery does (spark_jobs.persist.claimer): a run that yields wrote nothing but its
claim, its result is a BackfillYielded, and BackfillOperator has Airflow run it again later.

Exit status: 0 done; 3 part of the range was already lost (the result lists it; the rest was
backfilled); 75 yielded to the live job (run it again later); 2 bad arguments, configuration or
a range beyond retention (the message says which; the result is a BackfillRefusal); 1 a failure
while running.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import sys
import time
from pathlib import Path

import msgspec

# spark-submit runs this file as a script: the project's root, not this file's folder, goes first
# on the path (the folder's modules would shadow top-level ones), so it imports when not installed.
sys.path[0] = str(Path(__file__).resolve().parents[2])

from connectors.lake_storage import LakeStorageError  # noqa: E402
from tidemark.backfill_plan import (  # noqa: E402
    BackfillPlan,
    BeyondRetentionError,
    plan_backfill,
)
from tidemark.backfill_request import BackfillRequest, BackfillRequestError, check_backfill_request  # noqa: E402
from tidemark.backfill_result import (  # noqa: E402
    BackfillRefusal,
    BackfillResult,
    BackfillYielded,
    LostSpan,
    encode_backfill_outcome,
)
from tidemark.crash_points import CrashPoint, crash_points_from_environment  # noqa: E402
from tidemark.event_time_text import format_event_time  # noqa: E402
from tidemark.partition_limit import PartitionLimitError  # noqa: E402
from tidemark.stream_config import StreamConfig, StreamConfigError, load_streams  # noqa: E402

log = logging.getLogger("tidemark.backfill")

EXIT_BAD_INPUT = 2
EXIT_LOST = 3
# The run claimed its offsets and yielded to the live job's batch in flight (tidemark.live_batch_wait):
# it wrote nothing but the claim and must run again later (EX_TEMPFAIL of sysexits.h).
EXIT_YIELDED = 75


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="backfill", description="Backfill an event-time range of a stream from its log."
    )
    parser.add_argument("--request", required=True, help="a BackfillRequest's JSON (tidemark.backfill_request)")
    parser.add_argument("--run-name", default="", help="names the checkpoint: the same name resumes a killed run")
    parser.add_argument("--conf", default=os.environ.get("TIDEMARK_CONF", "conf/streams.yaml"))
    parser.add_argument("--max-records-per-batch", type=int, default=None)
    parser.add_argument("--result", type=Path, help="write the backfill result as JSON here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from connectors.kafka_clients import KafkaUnavailableError
    from connectors.kinesis_api import KinesisUnavailableError

    args = parse_args(argv)
    try:
        streams = load_streams(args.conf)
        request = check_backfill_request(BackfillRequest.decode(args.request), streams)
        stream = streams[request.stream]
        plan = plan_range(stream, request)
        crash_points = crash_points_from_environment(os.environ)
    except (StreamConfigError, BackfillRequestError, BeyondRetentionError, ValueError) as error:
        return _refuse(args.result, str(error))
    except (KinesisUnavailableError, KafkaUnavailableError) as error:
        # A stream that does not exist, an endpoint that does not answer, refused credentials:
        # the message names the stream (or the brokers and the connection), and nothing was read yet.
        return _refuse(args.result, str(error))
    from spark_jobs.persist.claimer import ClaimYielded

    try:
        result = backfill(
            stream,
            request,
            plan,
            args.run_name,
            args.max_records_per_batch or stream.persist.max_records_per_batch,
            crash_points,
        )
    except (ShadowSetInUseError, PartitionLimitError, LakeStorageError) as error:
        return _refuse(args.result, str(error))
    except ClaimYielded as yielded:
        print(f"backfill: yielded: {yielded}", file=sys.stderr)
        if args.result:
            args.result.parent.mkdir(parents=True, exist_ok=True)
            args.result.write_bytes(
                encode_backfill_outcome(BackfillYielded(stream.name, request.target, yielded.yielded))
            )
        return EXIT_YIELDED
    except Exception as error:  # a refusal, a registry that was down: one line (spark_jobs.query_failure); else raised
        from spark_jobs.query_failure import exit_for_failure

        return exit_for_failure("backfill", stream.name, error)
    if args.result:
        args.result.parent.mkdir(parents=True, exist_ok=True)
        args.result.write_bytes(encode_backfill_outcome(result))
    if result.lost:
        log.error(
            {
                "event": "backfill_range_lost",
                "stream": stream.name,
                "lost": [msgspec.to_builtins(part) for part in result.lost],
                "detail": "part of the range left the log (retention) and could not be read; the rest was backfilled. "
                "This backfill is NOT complete.",
            }
        )
        return EXIT_LOST
    return 0


def _refuse(result: Path | None, message: str) -> int:
    print(f"backfill: {message}", file=sys.stderr)
    if result:
        result.parent.mkdir(parents=True, exist_ok=True)
        result.write_bytes(encode_backfill_outcome(BackfillRefusal(message)))
    return EXIT_BAD_INPUT


def plan_range(stream: StreamConfig, request: BackfillRequest) -> BackfillPlan:
    """Positions per partition from the log's time index, and the part retention already took."""
    from connectors.partitioned_logs import open_log

    opened = open_log(stream.source.connection())
    try:
        indexes = opened.backfill_indexes(request)
    finally:
        opened.close()
    doubtful = [
        p
        for p, i in indexes.items()
        if i.earliest != 0 and (i.first_retained_ms is None or request.start_ms < i.first_retained_ms)
    ]
    ledger_first = _ledger_first_offsets(stream, request, doubtful) if doubtful else {}
    plan = plan_backfill(request, indexes, ledger_first)
    positions = stream.source.position_type
    log.info(
        {
            "event": "backfill_planned",
            "stream": stream.name,
            "target": request.target,
            "start": format_event_time(request.start_ms),
            "end": format_event_time(request.end_ms),
            "window_by": stream.source.connection().window_by,
            "partitions": list(plan.partitions),
            "ranges": {str(p): [r.start, r.end] for p, r in sorted(plan.ranges.items())},
            # Dense offsets count positions; sparse sequence numbers count nothing.
            **({"offsets": sum(r.size for r in plan.ranges.values())} if positions.dense else {}),
            "lost": [part.to_json() for part in plan.lost],
        }
    )
    return plan


def _ledger_first_offsets(stream: StreamConfig, request: BackfillRequest, partitions: list[int]) -> dict[int, int]:
    """Where live's ledger says the range began in ``partitions``: the first offset of the first
    live range that reached ``start``. Only asked when retention may have taken part of the range."""
    from pyspark.sql import functions as F

    from connectors.spark_session import batch_job_conf, lake_spark_session
    from spark_jobs.lake.tables import LakeTables

    spark = lake_spark_session(f"tidemark-backfill-{stream.name}", batch_job_conf(stream))
    tables = LakeTables(spark, stream)
    if not tables.exists("ledger"):
        return {}  # the lake never saw the stream: a question, not a reason to create its tables
    rows = (
        tables.read("ledger")
        .where((F.col("mode") == "live") & F.col("source_partition").isin(partitions))
        .where(F.unix_millis("max_event_time") >= request.start_ms)
        .groupBy("source_partition")
        .agg(F.min("start_offset").alias("first"))
        .collect()
    )
    return {row.source_partition: tables.positions.from_column(row.first) for row in rows}


def backfill(
    stream: StreamConfig,
    request: BackfillRequest,
    plan: BackfillPlan,
    run_name: str,
    max_records_per_batch: int,
    crash_points: tuple[CrashPoint, ...] = (),
) -> BackfillResult:
    """Run ``plan``; returns the result: ranges, counts, rate, lost parts, and (``request.compare``)
    the comparison with live."""
    from connectors.lake_storage_check import check_lake_storage
    from connectors.spark_session import batch_job_conf, lake_spark_session
    from spark_jobs.persist.pipeline import PersistRun, check_topic_partitions, run_pipeline
    from spark_jobs.replay.shadow_comparison import compare_with_live
    from tidemark.backfill_progress import BackfillProgress

    check_topic_partitions(stream)
    check_lake_storage(stream)
    bounds = plan.offset_bounds()
    spark = lake_spark_session(f"tidemark-backfill-{stream.name}", batch_job_conf(stream, max_records_per_batch))
    started = time.monotonic()
    counted = {"batches": 0, "records": 0, "late": 0, "quarantined": 0}
    summary = None  # no bounds: nothing to read, no pipeline run
    if bounds:
        tracker = BackfillProgress(bounds, dense=stream.source.position_type.dense)

        def progress(ranges, totals) -> None:
            counted["batches"] += 1
            for key in ("records", "late", "quarantined"):
                counted[key] += totals[key]
            read = totals["records"] + totals["late"] + totals["quarantined"]
            report = tracker.batch_read({p: planned.end_offset for p, planned in ranges.items()}, read)
            log.info(
                {"event": "backfill_progress", "stream": stream.name, "target": request.target, **report.to_json()}
            )

        checkpoint = f"{stream.checkpoint_path('backfill')}/{_checkpoint_name(request, run_name)}"
        if request.shadow is not None:
            _refuse_a_used_shadow_set(spark, stream, request.shadow, checkpoint)
        run = PersistRun(
            mode="backfill",
            trigger="available_now",
            checkpoint=checkpoint,
            max_records_per_batch=max_records_per_batch,
            offset_bounds=bounds,
            shadow=request.shadow,
            crash_points=crash_points,
        )
        summary = run_pipeline(spark, stream, run, progress=progress)
    seconds = time.monotonic() - started
    comparison = compare_with_live(spark, stream, request.shadow, bounds).comparison() if request.compare else None
    read = counted["records"] + counted["late"] + counted["quarantined"]
    into_events = request.shadow is None
    result = BackfillResult(
        stream=request.stream,
        start=format_event_time(request.start_ms),
        end=format_event_time(request.end_ms),
        partitions=plan.partitions or request.partitions,
        shadow=request.shadow,
        target=request.target,
        ranges={str(p): tuple(b) for p, b in bounds.items()},
        **counted,
        seconds=round(seconds, 1),
        records_per_second=round(read / seconds) if seconds > 0 and read else None,
        event_hours=summary.event_hours if summary else (),
        # Into events: rows this run's own commits inserted (MERGE metrics), not what it read.
        inserted=(summary.inserted if summary else 0) if into_events else None,
        commit_conflicts_retried=(summary.commit_conflicts_retried if summary else 0) if into_events else None,
        lost=tuple(msgspec.convert(part.to_json(), LostSpan) for part in plan.lost),
        comparison=comparison,
        window_by=stream.source.connection().window_by,
    )
    log.info({"event": "backfill_finished", **{k: v for k, v in result.to_json().items() if k != "comparison"}})
    if comparison is not None:
        level = logging.ERROR if comparison.differing else logging.INFO
        log.log(
            level, {"event": "backfill_compared_with_live", "stream": stream.name, **msgspec.to_builtins(comparison)}
        )
    return result


class ShadowSetInUseError(ValueError):
    """The shadow set holds another run's backfill: writing it again would mix two runs."""


def _refuse_a_used_shadow_set(spark, stream: StreamConfig, shadow: str, checkpoint: str) -> None:
    """A shadow set is written by one run only (its batches append, they do not MERGE): a new run
    (no checkpoint yet) may not write a set that already holds rows; the same run resumed may.
    Rows in any of its tables count: a run that died after its first batch's events commit and
    before its ledger's left rows only the ledger does not know (found with a crash point)."""
    from spark_jobs.lake.tables import LakeTables
    from spark_jobs.streaming_checkpoint import checkpoint_has_offsets

    if checkpoint_has_offsets(spark, checkpoint):
        return
    tables = LakeTables(spark, stream, shadow=shadow)
    for table in ("ledger", "events", "late", "quarantine"):
        path = tables.path(table)
        if tables.exists(table) and not tables.read(table).limit(1).isEmpty():
            raise ShadowSetInUseError(
                f"param 'shadow_name': the shadow set {shadow!r} already holds another run's backfill ({path}); "
                "choose another name, or delete that folder to start it again"
            )


def _checkpoint_name(request: BackfillRequest, run_name: str) -> str:
    """One checkpoint per request and run: a retried run resumes it, another run starts afresh.
    The digest is of the document the request was before it became a Struct, so a run killed
    before that change resumes its checkpoint after it."""
    document = {
        "stream": request.stream,
        "start": format_event_time(request.start_ms),
        "end": format_event_time(request.end_ms),
        "partitions": list(request.partitions),
        "shadow": request.shadow,
    }
    digest = hashlib.sha1(json.dumps([document, run_name]).encode()).hexdigest()[:16]
    return f"{request.shadow or 'events'}-{digest}"


if __name__ == "__main__":
    from spark_jobs.json_log import configure_json_logging

    configure_json_logging()
    sys.exit(main())
