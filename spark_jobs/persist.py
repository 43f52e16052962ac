"""Entry point of the persist job: one stream's Kafka topic into its Delta tables.

    spark-submit spark_jobs/persist.py --stream telemetry [--conf conf/streams.yaml]
        [--mode available_now|continuous] [--max-records-per-batch N]

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

from tidemark.stream_config import PERSIST_MODES, StreamConfig, StreamConfigError, load_stream  # noqa: E402

log = logging.getLogger("tidemark.persist")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="persist", description="Persist one stream's log into its Delta tables.")
    parser.add_argument("--stream", required=True, help="stream name in the configuration")
    parser.add_argument("--conf", default=os.environ.get("TIDEMARK_CONF", "conf/streams.yaml"), help="streams.yaml path")
    parser.add_argument("--mode", choices=PERSIST_MODES, help="override the stream's persist.mode")
    parser.add_argument("--max-records-per-batch", type=_positive_int, help="override persist.max_records_per_batch")
    return parser.parse_args(argv)


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format='{"level":"%(levelname)s","logger":"%(name)s","msg":%(message)s}')
    args = parse_args(argv)
    try:
        stream = load_stream(args.conf, args.stream)
    except StreamConfigError as error:
        print(f"persist: {error}", file=sys.stderr)
        return 2
    mode = args.mode or stream.persist.mode
    max_records = args.max_records_per_batch or stream.persist.max_records_per_batch
    run_persist(stream, mode, max_records)
    return 0


def run_persist(stream: StreamConfig, mode: str, max_records_per_batch: int) -> dict:
    """Run the persist query; returns a summary of the run (batches, rows read)."""
    from spark_jobs.kafka_source import KafkaLogSource
    from spark_jobs.lake_tables import LakeTables
    from spark_jobs.persist_batch import PersistBatch, QueryIdentity
    from spark_jobs.spark_session import lake_spark_session

    spark = lake_spark_session(f"tidemark-persist-{stream.name}")
    spark.dataSource.register(KafkaLogSource)
    tables = LakeTables(spark, stream)
    tables.ensure()

    identity = QueryIdentity()
    raw = (
        spark.readStream.format(KafkaLogSource.name())
        .option("bootstrap_servers", stream.source.bootstrap_servers)
        .option("topic", stream.source.topic)
        .option("starting_offsets", stream.source.starting_offsets)
        .option("max_records_per_batch", str(max_records_per_batch))
        .load()
    )
    writer = (
        raw.writeStream.queryName(f"tidemark_persist_{stream.name}")
        .foreachBatch(PersistBatch(stream, tables, identity, mode="live"))
        .option("checkpointLocation", stream.checkpoint_path("persist"))
    )
    if mode == "available_now":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{stream.persist.trigger_interval_ms} milliseconds")
    query = writer.start()
    identity.set(query.id)
    log.info(json.dumps({"event": "query_started", "stream": stream.name, "mode": mode, "query_id": query.id}))
    query.awaitTermination()

    progress = query.recentProgress
    summary = {
        "stream": stream.name,
        "mode": mode,
        "query_id": query.id,
        "batches": len(progress),
        "rows_read": sum(p.numInputRows for p in progress),
    }
    log.info(json.dumps({"event": "query_finished", **summary}))
    return summary


if __name__ == "__main__":
    sys.exit(main())
