"""Entry point of the persist job: one stream's Kafka topic into its Delta tables.

    spark-submit spark_jobs/persist.py --stream telemetry [--conf conf/streams.yaml]
        [--mode available_now|continuous] [--max-records-per-batch N] [--no-alignment]
        [--run-summary PATH]

available_now reads what the log holds when the run starts, batch by batch within the read
limit, and stops; continuous runs one micro-batch per trigger interval until stopped. Both resume
from the stream's checkpoint, so a killed run loses and duplicates nothing.

Exit status: 0 done, 2 bad arguments or configuration (the message names the problem), 1 a
failure while running.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

# spark-submit runs this file as a script; make the project importable when it is not installed.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tidemark.event_time_text import format_event_time, format_optional_event_time  # noqa: E402
from tidemark.stream_config import PERSIST_MODES, StreamConfig, StreamConfigError, load_stream  # noqa: E402

log = logging.getLogger("tidemark.persist")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="persist", description="Persist one stream's log into its Delta tables.")
    parser.add_argument("--stream", required=True, help="stream name in the configuration")
    parser.add_argument("--conf", default=os.environ.get("TIDEMARK_CONF", "conf/streams.yaml"), help="streams.yaml path")
    parser.add_argument("--mode", choices=PERSIST_MODES, help="override the stream's persist.mode")
    parser.add_argument("--max-records-per-batch", type=_positive_int, help="override persist.max_records_per_batch")
    parser.add_argument(
        "--no-alignment",
        action="store_true",
        help="slice batches by record count only (for comparison; the event-time rules still route and seal)",
    )
    parser.add_argument("--run-summary", type=Path, help="write the run's summary (sealed hours, G) as JSON here")
    return parser.parse_args(argv)


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    from spark_jobs.json_log import configure_json_logging

    configure_json_logging()
    args = parse_args(argv)
    try:
        stream = load_stream(args.conf, args.stream)
    except StreamConfigError as error:
        print(f"persist: {error}", file=sys.stderr)
        return 2
    mode = args.mode or stream.persist.mode
    max_records = args.max_records_per_batch or stream.persist.max_records_per_batch
    summary = run_persist(stream, mode, max_records, align=not args.no_alignment)
    if args.run_summary:
        args.run_summary.parent.mkdir(parents=True, exist_ok=True)
        args.run_summary.write_text(json.dumps(summary, indent=2) + "\n")
    return 0


def run_persist(stream: StreamConfig, mode: str, max_records_per_batch: int, align: bool = True) -> dict:
    """Run the persist query; returns a summary of the run: batches, G, the hours it sealed.

    Aligned slicing needs log timestamps that are event times; where the stream says they are
    not, the source slices by record count, and the ledger's ``slicing`` column says so.
    """
    from spark_jobs.kafka_source import KafkaLogSource
    from spark_jobs.lake_tables import LakeTables
    from spark_jobs.persist_batch import PersistBatch, QueryIdentity
    from spark_jobs.spark_session import lake_spark_session

    spark = lake_spark_session(f"tidemark-persist-{stream.name}")
    spark.dataSource.register(KafkaLogSource)
    tables = LakeTables(spark, stream)
    tables.ensure()

    identity = QueryIdentity()
    tolerances = stream.event_time
    feedback_dir = _feedback_dir(stream)
    raw = (
        spark.readStream.format(KafkaLogSource.name())
        .option("bootstrap_servers", stream.source.bootstrap_servers)
        .option("topic", stream.source.topic)
        .option("starting_offsets", stream.source.starting_offsets)
        .option("max_records_per_batch", str(max_records_per_batch))
        .option("alignment", str(align and stream.source.log_timestamp_is_event_time).lower())
        .option("max_out_of_orderness_ms", str(tolerances.max_out_of_orderness_ms))
        .option("max_drift_ms", str(tolerances.max_drift_ms))
        .option("idle_timeout_ms", str(tolerances.idle_timeout_ms))
        .option("max_future_skew_ms", str(tolerances.max_future_skew_ms))
        .option("open_transaction_timeout_ms", str(stream.source.open_transaction_timeout_ms))
        .option("feedback_dir", feedback_dir)
        .load()
    )
    persist_batch = PersistBatch(stream, tables, identity, mode="live", feedback_dir=feedback_dir)
    writer = (
        raw.writeStream.queryName(f"tidemark_persist_{stream.name}")
        .foreachBatch(persist_batch)
        .option("checkpointLocation", stream.checkpoint_path("persist"))
    )
    if mode == "available_now":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{stream.persist.trigger_interval_ms} milliseconds")
    query = writer.start()
    identity.set(query.id)
    log.info({"event": "query_started", "stream": stream.name, "mode": mode, "query_id": query.id})
    query.awaitTermination()

    progress = query.recentProgress
    summary = {
        "stream": stream.name,
        "mode": mode,
        "query_id": query.id,
        "batches": len(progress),
        "global_watermark": format_optional_event_time(persist_batch.global_watermark_ms),
        "sealed_hours": [format_event_time(hour) for hour in sorted(set(persist_batch.sealed_hours))],
    }
    log.info({"event": "query_finished", **summary})
    return summary


def _feedback_dir(stream: StreamConfig) -> str:
    """Where the batches leave W_p for the planner: beside the checkpoint when that is a local
    folder; otherwise on the driver's disk under TIDEMARK_HOME (see spark_jobs.event_time_feedback)."""
    checkpoint = stream.checkpoint_path("persist")
    if "://" not in checkpoint or checkpoint.startswith("file://"):
        return checkpoint.removeprefix("file://") + "/_tidemark_feedback"
    home = os.environ.get("TIDEMARK_HOME", ".tidemark")
    return f"{home}/feedback/{stream.name}/persist"


if __name__ == "__main__":
    sys.exit(main())
