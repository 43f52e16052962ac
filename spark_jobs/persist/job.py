"""Entry point of the persist job: one stream's Kafka topic into its Delta tables.

    spark-submit spark_jobs/persist/job.py --stream telemetry [--conf conf/streams.yaml]
        [--mode available_now|continuous] [--max-records-per-batch N] [--no-alignment]
        [--run-summary PATH]

available_now reads what the log holds when the run starts, batch by batch within the read
limit, and stops; continuous runs one micro-batch per trigger interval until stopped. Both resume
from the stream's checkpoint, so a killed run loses and duplicates nothing; without a checkpoint
over tables that already hold the stream, they resume from the ledger (the lake is the truth).

The chaos switch ``TIDEMARK_CHAOS_FREEZE=<stream>:<partition>`` (environment only, off by
default) freezes a partition: the job reads nothing from it, to reproduce a stall. Tests make
it die at a named commit with ``TIDEMARK_CRASH_AT`` (tidemark.crash_points; refused, exit 2,
unless ``TIDEMARK_TEST_FAULTS=1``).

Exit status: 0 done, 2 bad arguments or configuration (the message names the problem), 3
offsets it must read next left the log before it read them (the message names them; every
later run stops the same way until the loss is dealt with), 1 another failure while running.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

# spark-submit runs this file as a script: the project's root, not this file's folder, goes first
# on the path (the folder's modules would shadow top-level ones), so it imports when not installed.
sys.path[0] = str(Path(__file__).resolve().parents[2])

from connectors.kafka_log import KafkaUnavailableError  # noqa: E402
from connectors.kinesis_api import KinesisUnavailableError  # noqa: E402
from connectors.lake_storage import LakeStorageError  # noqa: E402
from tidemark.crash_points import CrashPoint, crash_points_from_environment  # noqa: E402
from tidemark.kafka_access import KafkaAccessError  # noqa: E402
from tidemark.partition_limit import PartitionLimitError  # noqa: E402
from tidemark.persist_run_summary import PersistRunSummary  # noqa: E402
from tidemark.registry_access import RegistryAccess  # noqa: E402
from tidemark.retention_loss import RetentionLossError  # noqa: E402
from tidemark.stream_config import PERSIST_MODES, StreamConfig, StreamConfigError, load_stream  # noqa: E402

log = logging.getLogger("tidemark.persist")

# Offsets the job must read left the log before it read them (tidemark.retention_loss), as
# recovery and backfill exit for lost offsets.
EXIT_LOST = 3


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="persist", description="Persist one stream's log into its Delta tables.")
    parser.add_argument("--stream", required=True, help="stream name in the configuration")
    parser.add_argument(
        "--conf", default=os.environ.get("TIDEMARK_CONF", "conf/streams.yaml"), help="streams.yaml path"
    )
    parser.add_argument("--mode", choices=PERSIST_MODES, help="override the stream's persist.mode")
    parser.add_argument("--max-records-per-batch", type=_positive_int, help="override persist.max_records_per_batch")
    parser.add_argument(
        "--no-alignment",
        action="store_true",
        help="slice batches by record count only (for comparison; the event-time rules still route and seal)",
    )
    parser.add_argument(
        "--run-summary",
        type=Path,
        help="write the run's summary (sealed hours, G: tidemark.persist_run_summary) as JSON here",
    )
    return parser.parse_args(argv)


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    from spark_jobs.json_log import configure_json_logging

    configure_json_logging()
    args = parse_args(argv)
    code, summary = persist_named_stream(
        args.conf, args.stream, args.mode, args.max_records_per_batch, align=not args.no_alignment
    )
    if code == 0 and args.run_summary:
        summary.write(args.run_summary)
    return code


def persist_named_stream(
    conf: str,
    name: str,
    mode: str | None = None,
    max_records_per_batch: int | None = None,
    align: bool = True,
) -> tuple[int, PersistRunSummary | None]:
    """Persist stream ``name`` of the configuration at ``conf``: (exit status, the run's summary
    when it is 0). A failure the module's docstring lists prints one line on stderr naming it and
    gives its status; any other error is raised. In a driver that runs several streams
    (spark_jobs/persist/family_job.py) the first stream's session serves the next ones."""
    from connectors.spark_session import batch_job_conf
    from spark_jobs.persist.pipeline import (
        check_source_supported,
        frozen_partitions_from_environment,
        throttling_from_environment,
    )

    try:
        stream = load_stream(conf, name)
        check_source_supported(stream)
        frozen = frozen_partitions_from_environment(stream)
        throttling = throttling_from_environment(stream)
        crash_points = crash_points_from_environment(os.environ)
        max_records = max_records_per_batch or stream.persist.max_records_per_batch
        session_conf = batch_job_conf(stream, max_records)
        stream.source.connection().access()  # the log's credentials or security settings, before any work
        if stream.payload.reads_registry:  # and the registry's login, where the stream names one
            RegistryAccess.of(stream.payload.registry_url, stream.payload.registry_conn_id)
    except KafkaAccessError as error:  # it names the connection and the variable, not the stream
        print(f"persist: stream {name!r}: {error}", file=sys.stderr)
        return 2, None
    except (StreamConfigError, ValueError) as error:
        print(f"persist: {error}", file=sys.stderr)
        return 2, None
    mode = mode or stream.persist.mode
    try:
        summary = run_persist(
            stream,
            mode,
            max_records,
            align=align,
            frozen_partitions=frozen,
            session_conf=session_conf,
            crash_points=crash_points,
            injected_throttling=throttling,
        )
    except (PartitionLimitError, LakeStorageError, KinesisUnavailableError) as error:
        print(f"persist: {error}", file=sys.stderr)
        return 2, None
    except KafkaUnavailableError as error:  # it names the brokers and the connection, not the stream
        print(f"persist: stream {stream.name!r}: {error}", file=sys.stderr)
        return 2, None
    except RetentionLossError as error:
        print(f"persist: {error}", file=sys.stderr)
        return EXIT_LOST, None
    except Exception as error:  # a refusal, a registry that was down: one line (spark_jobs.query_failure); else raised
        from spark_jobs.query_failure import exit_for_failure

        return exit_for_failure("persist", stream.name, error), None
    return 0, summary


def run_persist(
    stream: StreamConfig,
    mode: str,
    max_records_per_batch: int,
    align: bool = True,
    frozen_partitions: tuple[int, ...] = (),
    session_conf: dict[str, str] | None = None,
    crash_points: tuple[CrashPoint, ...] = (),
    injected_throttling: float = 0.0,
) -> PersistRunSummary:
    """Run the live persist query; returns a summary of the run: batches, G, the hours it sealed.

    Aligned slicing needs log timestamps that are event times; where the stream says they are
    not, the source slices by record count, and the ledger's ``slicing`` column says so. Without
    a checkpoint over tables that already hold the stream, the run resumes from the ledger.
    """
    from connectors.lake_storage_check import check_lake_storage
    from connectors.spark_session import lake_spark_session
    from spark_jobs.persist.pipeline import PersistRun, check_topic_partitions, run_pipeline

    check_topic_partitions(stream)
    # A bucket that is missing, refuses the credentials or sits behind a dead endpoint fails the
    # run here, in a second and before Spark, instead of minutes later inside a Hadoop stack.
    check_lake_storage(stream)
    run = PersistRun(
        mode="live",
        trigger=mode,
        checkpoint=stream.checkpoint_path("persist"),
        max_records_per_batch=max_records_per_batch,
        align=align,
        frozen_partitions=frozen_partitions,
        crash_points=crash_points,
        injected_throttling=injected_throttling,
        max_batches=stream.persist.max_batches_per_run if mode == "available_now" else None,
    )
    return run_pipeline(lake_spark_session(f"tidemark-persist-{stream.name}", session_conf), stream, run)


if __name__ == "__main__":
    sys.exit(main())
