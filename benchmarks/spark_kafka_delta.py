"""Run (b) of the catch-up benchmark: Spark's built-in Kafka source into tidemark's events layout.

    .venv/bin/python benchmarks/spark_kafka_delta.py --conf streams.yaml [--stream telemetry] \\
        --max-offsets-per-trigger 200000 --report report.json

Started as its own process by catch_up_side_by_side.py (and registry_payloads.py), so that its
wall time (JVM start included) and resident memory are measured the same way as the persist
job's. Reads the topic and broker of the stream's configuration, writes the stream's events table
path of that configuration, and checkpoints under its checkpoint root (job ``spark-kafka-delta``).
One query:

    Kafka (startingOffsets=earliest, maxOffsetsPerTrigger=N, read_committed, trigger availableNow)
      -> foreachBatch:  from_json(value) -> the events columns (benchmarks/spark_kafka_events.py)
                        (payload.format avro: from_avro, see below)
                        observe: rows, unparsed, per partition rows and max event time
                        append partitioned by event_date, event_hour; idempotent:
                        txnAppId = the query's id, txnVersion = the batch id

Plain: no watermark operator, no state. A watermark would add a state store's cost to the peer
without changing what it writes; the driver replays Spark's watermark over the batches this run
made (catch_up_figures.replay_plain_watermark) to say what it would have dropped.

A stream whose payload.format is avro is read as a Spark user reads registry-framed Avro with
Spark's own functions: the registry's 5-byte prefix (magic byte, schema id) cut off with
substring, the rest decoded by pyspark.sql.avro.functions.from_avro with one writer schema, the
one the data generator registers for the stream's declared fields
(generator.value_encoders.avro_writer_schema). The schema id is not read and the registry is
never asked: this holds only for a topic of that one writer schema. Needs spark-avro, in the
spark-kafka jar group.

Writes one JSON report (times ms since the epoch, UTC; durations in seconds):

    session_seconds   start of the JVM and the Spark session
    query_seconds     start() of the query to its end
    batches           per batch with rows: batch_id, rows, unparsed, rows_per_partition,
                      max_event_time_ms per partition that had rows, offsets per partition
                      [start, end) as the query's progress reports them, seconds
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.spark_kafka_events import (  # noqa: E402
    events_from_avro_kafka_rows,
    events_from_kafka_rows,
    kafka_delta_session,
)
from spark_jobs.persist.batch import QueryIdentity  # noqa: E402
from tidemark.stream_config import PayloadSchema, load_stream  # noqa: E402
from tidemark.table_schemas import EVENTS_PARTITIONING  # noqa: E402

JOB = "spark-kafka-delta"


def main() -> int:
    args = _parse_args()
    stream = load_stream(args.conf, args.stream)
    started = time.monotonic()
    spark = kafka_delta_session("bench-spark-kafka-delta")
    session_s = time.monotonic() - started

    source = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", stream.source.bootstrap_servers)
        .option("subscribe", stream.source.topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(args.max_offsets_per_trigger))
        # As tidemark reads (and the read ceiling): nothing of an open or aborted transaction.
        .option("kafka.isolation.level", "read_committed")
        .option("failOnDataLoss", "true")
        .load()
    )
    writer = EventsBatchWriter(stream, stream.table_path("events"))
    query_started = time.monotonic()
    query = (
        source.writeStream.queryName("spark_kafka_delta")
        .foreachBatch(writer)
        .option("checkpointLocation", stream.checkpoint_path(JOB))
        .trigger(availableNow=True)
        .start()
    )
    writer.query_id.set(query.id)
    query.awaitTermination()
    query_s = time.monotonic() - query_started

    offsets = {progress.batchId: _progress_offsets(progress, stream.source.topic) for progress in query.recentProgress}
    batches = [{**batch, "offsets": offsets.get(batch["batch_id"], {})} for batch in writer.batches]
    report = {"session_seconds": round(session_s, 1), "query_seconds": round(query_s, 1), "batches": batches}
    Path(args.report).write_text(json.dumps(report, indent=1) + "\n")
    spark.stop()
    return 0


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conf", required=True, help="streams.yaml: the topic, broker, lake and checkpoint root")
    parser.add_argument("--stream", default="telemetry")
    parser.add_argument("--max-offsets-per-trigger", type=int, required=True, help="the row budget of a batch")
    parser.add_argument("--report", required=True, help="JSON report to write")
    return parser.parse_args()


class EventsBatchWriter:
    """The foreachBatch function: one idempotent, partitioned append per micro-batch, with the
    batch's figures observed while it is written (no second pass over the batch)."""

    def __init__(self, stream, table_path: str):
        self._stream = stream
        self._table_path = table_path
        self._events = _events_of(stream.payload)
        self.query_id = QueryIdentity()
        self.batches: list[dict] = []

    def __call__(self, batch, batch_id: int) -> None:
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        started = time.monotonic()
        events = self._events(batch, self._stream.payload, F.lit(batch_id))
        observation = Observation(f"batch_{batch_id}")
        per_partition = []
        for p in range(self._stream.source.partitions):
            in_p = F.col("source_partition") == p
            per_partition += [
                F.count_if(in_p).alias(f"rows_{p}"),
                # Epoch ms, not TIMESTAMP: a collected TIMESTAMP is a naive datetime in the local zone.
                F.unix_millis(F.max(F.when(in_p, F.col("event_time")))).alias(f"max_event_time_{p}"),
            ]
        observed = events.observe(
            observation,
            F.count(F.lit(1)).alias("rows"),
            F.count_if(F.col("event_time").isNull()).alias("unparsed"),
            *per_partition,
        )
        (
            observed.write.format("delta")
            .mode("append")
            .partitionBy(*EVENTS_PARTITIONING)
            .option("txnAppId", self.query_id.get())
            .option("txnVersion", batch_id)
            .save(self._table_path)
        )
        metrics = observation.get
        partitions = range(self._stream.source.partitions)
        self.batches.append(
            {
                "batch_id": batch_id,
                "rows": metrics["rows"],
                "unparsed": metrics["unparsed"],
                "rows_per_partition": {str(p): metrics[f"rows_{p}"] for p in partitions},
                "max_event_time_ms": {
                    str(p): metrics[f"max_event_time_{p}"] for p in partitions if metrics[f"rows_{p}"]
                },
                "seconds": round(time.monotonic() - started, 2),
            }
        )


def _events_of(payload: PayloadSchema):
    """How a batch's Kafka rows become events rows: from_json for a JSON payload, from_avro with
    the generator's writer schema for an Avro one."""
    if payload.format == "json":
        return events_from_kafka_rows
    if payload.format == "avro":
        from generator.value_encoders import avro_writer_schema

        return functools.partial(events_from_avro_kafka_rows, writer_schema=json.dumps(avro_writer_schema(payload)))
    raise SystemExit(f"spark_kafka_delta.py reads json or avro payloads, not {payload.format}")


def _progress_offsets(progress, topic: str) -> dict[str, list[int]]:
    """[start, end) per partition of one batch, from its StreamingQueryProgress. The first batch
    has no start offset: it starts at the earliest, 0 on a fresh topic."""
    source = progress.sources[0]
    start = (json.loads(source.startOffset) or {}).get(topic, {}) if source.startOffset else {}
    end = json.loads(source.endOffset).get(topic, {}) if source.endOffset else {}
    return {p: [start.get(p, 0), end[p]] for p in sorted(end, key=int)}


if __name__ == "__main__":
    sys.exit(main())
