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

On a Kinesis stream (``source.kind: kinesis``) the partition is a shard (its id's number) and the
ranges are sequence numbers [start, end), as the ledger holds them: the shard must be listed
(open, or closed and still retained; one that is not is refused naming it), the part of a range
below the shard's first retained record (its trim horizon) is lost, reported with the shard and
the sequence range (how many records it held is unknowable: sequence numbers are sparse), and the
rest is read by the same Kinesis source, each range by sequence number in the Spark tasks.

Before it writes, the run claims its ranges and settles with the live job's batch in flight
(spark_jobs.persist.claimer): it waits for that batch while the live driver beats, and yields
when the batch cannot commit (the live job died in it) or does not in time. A yielded run wrote
nothing but its claim; its result is a RecoveryYielded, and RecoverOperator has Airflow run it
again later, once the live job's next run has replayed the batch without the claimed offsets.

Exit status: 0 every range recovered; 3 some offsets were already lost (the result lists them;
every recoverable range was still recovered first); 75 yielded to the live job (the result says
why; run it again later); 2 bad arguments or configuration (the message names the param); 1 a
failure while running.
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
from tidemark.crash_points import CrashPoint, crash_points_from_environment  # noqa: E402
from tidemark.event_time_text import format_optional_event_time  # noqa: E402
from tidemark.kafka_access import KafkaAccessError  # noqa: E402
from tidemark.partition_limit import PartitionLimitError  # noqa: E402
from tidemark.recovery_plan import RecoveryPlan  # noqa: E402
from tidemark.recovery_request import (  # noqa: E402
    RecoveryRequest,
    RecoveryRequestError,
    check_recovery_request,
)
from tidemark.recovery_result import (  # noqa: E402
    RecoveredRange,
    RecoveryOutcome,
    RecoveryResult,
    RecoveryYielded,
    encode_recovery_outcome,
)
from tidemark.stream_config import StreamConfig, StreamConfigError, load_streams  # noqa: E402

log = logging.getLogger("tidemark.recover")

EXIT_LOST = 3
# The run claimed its offsets and yielded to the live job's batch in flight (tidemark.live_batch_wait):
# it wrote nothing but the claim and must run again later (EX_TEMPFAIL of sysexits.h).
EXIT_YIELDED = 75


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
        crash_points = crash_points_from_environment(os.environ)
        streams[request.stream].source.connection().access()  # the log's credentials, before any work
    except KafkaAccessError as error:  # it names the connection and the variable, not the stream
        print(f"recover: stream {request.stream!r}: {error}", file=sys.stderr)
        return 2
    except (StreamConfigError, RecoveryRequestError, ValueError) as error:
        print(f"recover: {error}", file=sys.stderr)
        return 2
    stream = streams[request.stream]
    from connectors.kafka_clients import KafkaRefusedError
    from connectors.kinesis_api import KinesisStreamNotFoundError, KinesisUnavailableError
    from spark_jobs.persist.claimer import ClaimYielded

    try:
        result = recover(
            stream, request, args.max_records_per_batch or stream.persist.max_records_per_batch, crash_points
        )
    except (PartitionLimitError, LakeStorageError, RecoveryRequestError, KinesisStreamNotFoundError) as error:
        print(f"recover: {error}", file=sys.stderr)
        return 2
    except KafkaRefusedError as error:  # it names the brokers and the connection, not the stream
        print(f"recover: stream {stream.name!r}: {error}", file=sys.stderr)
        return 2
    except KinesisUnavailableError as error:
        print(f"recover: {error}", file=sys.stderr)
        return 1
    except ClaimYielded as yielded:
        print(f"recover: yielded: {yielded}", file=sys.stderr)
        _write_result(args.result, RecoveryYielded(stream.name, request.partition, request.reason, yielded.yielded))
        return EXIT_YIELDED
    except Exception as error:  # a refusal, a registry that was down: one line (spark_jobs.query_failure); else raised
        from spark_jobs.query_failure import exit_for_failure

        return exit_for_failure("recover", stream.name, error)
    _write_result(args.result, result)
    if result.lost:
        log.error({"event": "offsets_lost", "stream": stream.name, **lost_report(stream, request.partition, result)})
        return EXIT_LOST
    return 0


def _write_result(path: Path | None, outcome: RecoveryOutcome) -> None:
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(encode_recovery_outcome(outcome))


def lost_report(stream: StreamConfig, partition: int, result: RecoveryResult) -> dict:
    """The log line's fields for ranges that left the log before they were persisted, in the
    log's words (``stream.source.connection()``): a Kafka topic's partition and offsets, a Kinesis
    stream's shard (its id too) and sequence numbers."""
    log = stream.source.connection()
    positions = log.position_type
    # Sparse positions go as text: 56 digits do not survive a JSON reader that parses numbers as doubles.
    lost = [[start, end] if positions.dense else [str(start), str(end)] for start, end in result.lost]
    spans = ", ".join(f"[{start}, {end})" for start, end in result.lost)
    # Dense offsets bound the records a range held; sparse sequence numbers say nothing of it.
    count = (
        ""
        if positions.dense
        else f" ({positions.name}s are sparse: how many records they held is unknown, possibly none)"
    )
    return {
        "partition": partition,
        "position": positions.name,
        "lost": lost,
        **log.partition_fields(partition),
        "detail": (
            f"{positions.name}s {spans} of {log.log_words}, {log.partition_words(partition)} left the log (retention) "
            f"before they were persisted{count}: they cannot be recovered; every other range was"
        ),
    }


def plan_recovery(stream: StreamConfig, request: RecoveryRequest) -> RecoveryPlan:
    """What the stream's log can replay of ``request`` (tidemark.recovery_plan)."""
    from connectors.partitioned_logs import open_log

    opened = open_log(stream.source.connection())
    try:
        return opened.plan_recovery(request)
    finally:
        opened.close()


def recover(
    stream: StreamConfig,
    request: RecoveryRequest,
    max_records_per_batch: int,
    crash_points: tuple[CrashPoint, ...] = (),
) -> RecoveryResult:
    """Replay ``request``; returns what was recovered and what was lost (tidemark.recovery_result)."""
    from connectors.lake_storage_check import check_lake_storage
    from connectors.spark_session import lake_spark_session
    from spark_jobs.lake.tables import LakeTables
    from spark_jobs.persist.pipeline import PersistRun, check_topic_partitions, run_pipeline

    check_topic_partitions(stream)
    check_lake_storage(stream)
    partition = request.partition
    planned = plan_recovery(stream, request)
    oldest_first, lost = planned.oldest_first, planned.lost
    log.info(
        {
            "event": "recovery_planned",
            "stream": stream.name,
            "partition": partition,
            "reason": request.reason,
            "restart_live": request.restart_live,
            **planned.log_fields,
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
                crash_points=crash_points,
            )
            summary = run_pipeline(spark, stream, run)
            event_hours.update(summary.event_hours)
            # Counted from this run's own commits (their MERGE metrics): another writer filling the
            # same offsets at the same time does not count as recovered here.
            recovered.append(
                RecoveredRange(
                    start=offsets.start,
                    end=offsets.end,
                    inserted=summary.inserted,
                    commit_conflicts_retried=summary.commit_conflicts_retried,
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


if __name__ == "__main__":
    sys.exit(main())
