"""Entry point of the recovery job: replay offset ranges of one partition into the stream's tables.

    spark-submit spark_jobs/replay/recover.py --request '{"stream": "telemetry", "partition": 2,
        "ranges": [{"start": 1200, "end": 1800}], "reason": "STOP: ...", "restart_live": true}'
        [--conf conf/streams.yaml] [--result PATH]

``--request`` is a RecoveryRequest's JSON (tidemark.recovery_request), decoded by that Struct:
the same value the quality run reported and the recover DAG validated. ``--result`` receives a
RecoveryResult's JSON (tidemark.recovery_result), which RecoverOperator decodes.

Retention first: the part of each range below the partition's earliest retained offset is lost
and goes into the result as lost. The rest is replayed oldest record first (closest to its
retention deadline), each range by the same pipeline as the live job (spark_jobs.persist.pipeline)
in mode ``recovery``: insert-only, so records the lake already holds are never written twice,
routed under the G that was in force for those offsets (the live ledger row that covered the
range's start, or the live job's current G), which recovery never moves. Its ledger rows say
mode=recovery; the live job, reading those offsets later, writes insert-only where they overlap.

Exit status: 0 every range recovered; 3 some offsets were already lost (the result lists them;
every recoverable range was still recovered first); 2 bad arguments or configuration (the
message names the param); 1 a failure while running.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

import msgspec

# spark-submit runs this file as a script: the project's root, not this file's folder, goes first
# on the path (the folder's modules would shadow top-level ones), so it imports when not installed.
sys.path[0] = str(Path(__file__).resolve().parents[2])

from connectors.lake_storage import LakeStorageError  # noqa: E402
from tidemark.crash_points import CrashPoint, crash_point_from_environment  # noqa: E402
from tidemark.event_time_text import format_optional_event_time  # noqa: E402
from tidemark.partition_limit import PartitionLimitError  # noqa: E402
from tidemark.recovery_request import (  # noqa: E402
    OffsetRange,
    RecoveryRequest,
    RecoveryRequestError,
    check_recovery_request,
    order_by_retention_deadline,
    split_by_retention,
)
from tidemark.recovery_result import RecoveredRange, RecoveryResult  # noqa: E402
from tidemark.stream_config import StreamConfig, StreamConfigError, load_streams  # noqa: E402

log = logging.getLogger("tidemark.recover")

EXIT_LOST = 3


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="recover", description="Replay offset ranges of one partition.")
    parser.add_argument("--request", required=True, help="a RecoveryRequest's JSON (tidemark.recovery_request)")
    parser.add_argument("--conf", default=os.environ.get("TIDEMARK_CONF", "conf/streams.yaml"))
    parser.add_argument("--max-records-per-batch", type=int, default=None)
    parser.add_argument("--result", type=Path, help="write the recovery result as JSON here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from spark_jobs.json_log import configure_json_logging

    configure_json_logging()
    args = parse_args(argv)
    try:
        streams = load_streams(args.conf)
        request = check_recovery_request(RecoveryRequest.decode(args.request), streams)
        crash_point = crash_point_from_environment(os.environ)
    except (StreamConfigError, RecoveryRequestError, ValueError) as error:
        print(f"recover: {error}", file=sys.stderr)
        return 2
    stream = streams[request.stream]
    from spark_jobs.persist.pipeline import LiveBatchInFlightError

    try:
        result = recover(
            stream, request, args.max_records_per_batch or stream.persist.max_records_per_batch, crash_point
        )
    except (PartitionLimitError, LakeStorageError) as error:
        print(f"recover: {error}", file=sys.stderr)
        return 2
    except LiveBatchInFlightError as error:
        print(f"recover: {error}", file=sys.stderr)
        return 1
    if args.result:
        args.result.parent.mkdir(parents=True, exist_ok=True)
        args.result.write_bytes(result.encode())
    if result.lost:
        log.error(
            {
                "event": "offsets_lost",
                "stream": stream.name,
                "partition": request.partition,
                "lost": [list(span) for span in result.lost],
                "detail": "these offsets left the log (retention) before they were persisted: they cannot be "
                "recovered; every other range was",
            }
        )
        return EXIT_LOST
    return 0


def recover(
    stream: StreamConfig, request: RecoveryRequest, max_records_per_batch: int, crash_point: CrashPoint | None = None
) -> RecoveryResult:
    """Replay ``request``; returns what was recovered and what was lost (tidemark.recovery_result)."""
    from connectors.kafka_log import KafkaLog
    from connectors.lake_storage_check import check_lake_storage
    from connectors.spark_session import lake_spark_session
    from spark_jobs.lake.tables import LakeTables
    from spark_jobs.persist.pipeline import PersistRun, check_topic_partitions, run_pipeline

    check_topic_partitions(stream)
    check_lake_storage(stream)
    partition = request.partition
    kafka = KafkaLog(stream.source.bootstrap_servers, stream.source.topic)
    try:
        bounds = kafka.bounds(partition)
        recoverable, lost = split_by_retention(request.ranges, bounds.earliest)
        # Nothing past the readable end exists yet: recovery never waits for records.
        recoverable = [OffsetRange(r.start, min(r.end, bounds.end)) for r in recoverable if r.start < bounds.end]
        oldest_first = order_by_retention_deadline(
            [(partition, r, _first_record_time(kafka, partition, r)) for r in recoverable]
        )
    finally:
        kafka.close()
    log.info(
        {
            "event": "recovery_planned",
            "stream": stream.name,
            "partition": partition,
            "reason": request.reason,
            "restart_live": request.restart_live,
            "earliest_retained_offset": bounds.earliest,
            "recoverable": [[r.start, r.end] for _, r, _ in oldest_first],
            "lost": [[r.start, r.end] for r in lost],
        }
    )

    spark = lake_spark_session(f"tidemark-recover-{stream.name}")
    tables = LakeTables(spark, stream)
    tables.ensure()
    recovered, event_hours = [], set()
    with tempfile.TemporaryDirectory(prefix=f"tidemark-recover-{stream.name}-") as folder:
        for number, (_, offsets, _) in enumerate(oldest_first):
            bound = {partition: (offsets.start, offsets.end)}
            pinned = tables.live_global_watermark_at_ms(partition, offsets.start)
            run = PersistRun(
                mode="recovery",
                trigger="available_now",
                checkpoint=f"{folder}/range-{number}",
                max_records_per_batch=max_records_per_batch,
                offset_bounds=bound,
                pinned_global_watermark_ms=pinned,
                crash_point=crash_point,
            )
            summary = run_pipeline(spark, stream, run)
            event_hours.update(summary["event_hours"])
            # Counted from this run's own commits (their MERGE metrics): another writer filling the
            # same offsets at the same time does not count as recovered here.
            recovered.append(
                RecoveredRange(
                    start=offsets.start,
                    end=offsets.end,
                    inserted=summary["inserted"],
                    commit_conflicts_retried=summary["commit_conflicts_retried"],
                    global_watermark=format_optional_event_time(pinned),
                )
            )
            log.info(
                {
                    "event": "range_recovered",
                    "stream": stream.name,
                    "partition": partition,
                    **msgspec.to_builtins(recovered[-1]),
                }
            )
    return RecoveryResult(
        stream=stream.name,
        partition=partition,
        reason=request.reason,
        recovered=tuple(recovered),
        inserted=sum(r.inserted for r in recovered),
        commit_conflicts_retried=sum(r.commit_conflicts_retried for r in recovered),
        lost=tuple((r.start, r.end) for r in lost),
        event_hours=tuple(sorted(event_hours)),
        finished_at=format_optional_event_time(int(time.time() * 1000)),
    )


def _first_record_time(kafka, partition: int, offsets: OffsetRange) -> int | None:
    following = kafka.next_record(partition, offsets.start)
    return None if following is None or following.offset >= offsets.end else following.timestamp_ms


if __name__ == "__main__":
    sys.exit(main())
