"""Run (d) of the catch-up benchmark, the write ceiling: the topic's rows, decoded into tidemark's
events columns and held in memory, appended to a partitioned Delta table in chunks of the row
budget. No Kafka and no decoding inside the timed part: what writing costs here.

    .venv/bin/python benchmarks/write_ceiling.py --conf streams.yaml [--stream telemetry] \\
        --max-records-per-batch 200000 --report report.json

Reads the topic and broker of the stream's configuration and writes its events table path.

1. (not timed) start the JVM and the session: tidemark's lake session with Spark's Kafka
   connector (benchmarks/spark_kafka_events.py), reported as ``session_seconds``;
2. (not timed) read the whole topic with Spark's Kafka batch source, build the events columns,
   cache the DataFrame and count it, so it is materialised in memory: ``decode_seconds``;
3. (timed, ``write_seconds``) append chunk after chunk, each an idempotent commit
   (txnAppId = this run's id, txnVersion = the chunk), partitioned by event_date, event_hour.

A chunk is a slice of offsets of every partition, [k·N/P, (k+1)·N/P) for N the budget and P the
partitions, the column ``step_id`` = k: N rows when every partition holds as many records, as in
the uniform backlog this run is made for (a skewed topic gives uneven chunks).

Writes one JSON report: records, chunks, session_seconds, decode_seconds, write_seconds,
records_per_second over write_seconds, and per chunk its rows and seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.spark_kafka_events import events_from_kafka_rows, kafka_delta_session  # noqa: E402
from tidemark.stream_config import load_stream  # noqa: E402
from tidemark.table_schemas import EVENTS_PARTITIONING  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conf", required=True, help="streams.yaml: the topic, broker and lake")
    parser.add_argument("--stream", default="telemetry")
    parser.add_argument("--max-records-per-batch", type=int, required=True, help="rows per chunk (all partitions)")
    parser.add_argument("--report", required=True, help="JSON report to write")
    args = parser.parse_args()
    stream = load_stream(args.conf, args.stream)

    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    started = time.monotonic()
    spark = kafka_delta_session("bench-write-ceiling")
    session_s = time.monotonic() - started

    started = time.monotonic()
    kafka_rows = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", stream.source.bootstrap_servers)
        .option("subscribe", stream.source.topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .option("kafka.isolation.level", "read_committed")
        .load()
    )
    partitions = stream.source.partitions
    chunk = F.floor(F.col("offset") * partitions / args.max_records_per_batch).cast("bigint")
    # MEMORY_ONLY: a chunk that did not fit would be read from Kafka again inside the timed part,
    # and the count below would hide that; the report's cached_partitions says whether all fit.
    events = events_from_kafka_rows(kafka_rows, stream.payload, chunk).persist(StorageLevel.MEMORY_ONLY)
    records = events.count()
    chunks = events.agg(F.max("step_id")).first()[0]
    chunks = 0 if chunks is None else chunks + 1
    unparsed = events.where(F.col("event_time").isNull()).count()
    decode_s = time.monotonic() - started
    cached = _cached_partitions(spark)

    app_id = f"bench-write-ceiling-{uuid.uuid4()}"
    per_chunk = []
    write_started = time.monotonic()
    for k in range(chunks):
        chunk_started = time.monotonic()
        (
            events.where(F.col("step_id") == k)
            .write.format("delta")
            .mode("append")
            .partitionBy(*EVENTS_PARTITIONING)
            .option("txnAppId", app_id)
            .option("txnVersion", k)
            .save(stream.table_path("events"))
        )
        per_chunk.append({"chunk": k, "seconds": round(time.monotonic() - chunk_started, 2)})
    write_s = time.monotonic() - write_started

    report = {
        "records": records,
        "unparsed": unparsed,
        "chunks": chunks,
        "session_seconds": round(session_s, 1),
        "decode_seconds": round(decode_s, 1),
        "write_seconds": round(write_s, 2),
        "records_per_second": round(records / write_s) if write_s > 0 else None,
        "cached_partitions": cached,
        "per_chunk": per_chunk,
    }
    Path(args.report).write_text(json.dumps(report, indent=1) + "\n")
    spark.stop()
    return 0


def _cached_partitions(spark) -> dict:
    """How much of the cached DataFrame is in memory: {"cached": n, "total": n, "memory_bytes": b}
    from the JVM's view of the cached RDDs (empty when the JVM does not expose it)."""
    try:
        infos = spark.sparkContext._jsc.sc().getRDDStorageInfo()
        cached = sum(info.numCachedPartitions() for info in infos)
        total = sum(info.numPartitions() for info in infos)
        memory = sum(info.memSize() for info in infos)
    except Exception as error:  # a private API: report its absence rather than fail the run
        return {"unknown": str(error)[:200]}
    return {"cached": cached, "total": total, "memory_bytes": memory}


if __name__ == "__main__":
    sys.exit(main())
