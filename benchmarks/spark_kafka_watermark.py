"""Run (c) of the side-by-side benchmark: Spark's built-in Kafka source and Spark's global watermark.

    .venv/bin/python benchmarks/spark_kafka_watermark.py --bootstrap 127.0.0.1:9092 --topic T \\
        --partitions 4 --max-offsets-per-trigger 50000 --checkpoint DIR --report report.json \\
        [--allowed-lateness-ms 600000] [--window-ms 300000]

Started as its own process by alignment_side_by_side.py, so that its wall time and resident
memory are measured the same way as the persist job's. One streaming query, one read:

    Kafka (startingOffsets=earliest, maxOffsetsPerTrigger=N, trigger availableNow)
      -> from_json(value).event_time
      -> observe("batch_read")              per-partition max event time and row count of the
                                            batch as read, before anything is dropped
      -> withWatermark(event_time, allowed lateness)
      -> count per (partition, 5-minute tumbling window), outputMode append

Spark keeps ONE watermark for the query: max event time seen in earlier batches minus the delay.
The stateful aggregation drops a row whose window was already emitted (window end <= the previous
batch's watermark, see spark_watermark_emulation.py); that is what this run measures. Rows are counted, never dropped, by this script itself: the figure of
dropped rows is produced − counted, where counted = windows the query emitted + windows still
held in the state store when availableNow stopped (append mode emits a window only after the
watermark passes its end, so the newest windows are never emitted in a bounded run; they were not
dropped, and the state store reader shows them).

Writes one JSON report: per batch (offsets, watermark, observed stats, Spark's own
numRowsDroppedByWatermark), emitted counts per partition, pending counts per partition.
Times in the report are ms since the epoch, UTC.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime
from pathlib import Path

OBSERVATION = "batch_read"


def main() -> int:
    args = _parse_args()
    spark = _spark_session(args.jars)
    counts, partitions = _windowed_counts(spark, args)
    emitted: dict[int, int] = {p: 0 for p in partitions}
    emitted_windows = 0

    def collect_emitted(batch, batch_id: int) -> None:
        nonlocal emitted_windows
        # Append mode: each emitted (partition, window) is final, so summing them is exact.
        for row in batch.select("source_partition", "count").collect():
            emitted[row.source_partition] += row["count"]
            emitted_windows += 1

    started = time.monotonic()
    query = (
        counts.writeStream.queryName("spark_kafka_watermark")
        .outputMode("append")
        .foreachBatch(collect_emitted)
        .option("checkpointLocation", args.checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    query_s = time.monotonic() - started
    batches = [_batch_figures(progress, args.topic, partitions) for progress in query.recentProgress]

    report = {
        "query_seconds": round(query_s, 1),
        "batches": batches,
        "emitted_per_partition": {str(p): n for p, n in emitted.items()},
        "emitted_windows": emitted_windows,
        "pending_per_partition": {str(p): n for p, n in _pending_in_state(spark, args.checkpoint, partitions).items()},
    }
    Path(args.report).write_text(json.dumps(report, indent=1) + "\n")
    spark.stop()
    return 0


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int, required=True, help="the topic's partition count")
    parser.add_argument("--max-offsets-per-trigger", type=int, required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--report", required=True, help="JSON report to write")
    parser.add_argument("--allowed-lateness-ms", type=int, default=600_000, help="watermark delay (default 10 min)")
    parser.add_argument("--window-ms", type=int, default=300_000, help="tumbling window length (default 5 min)")
    parser.add_argument(
        "--jars",
        default=os.environ.get("TIDEMARK_JARS") or str(Path(__file__).resolve().parents[1] / ".tidemark" / "jars"),
    )
    return parser.parse_args()


def _spark_session(jars: str):
    from pyspark.sql import SparkSession

    kafka_classpath = f"{jars}/spark-kafka/*"
    return (
        SparkSession.builder.master("local[2]")
        .appName("bench-spark-kafka-watermark")
        .config("spark.driver.extraClassPath", kafka_classpath)
        .config("spark.executor.extraClassPath", kafka_classpath)
        .config("spark.driver.memory", "2g")  # as tidemark's own session
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # Every batch's progress is read at the end; the default keeps only the last 100.
        .config("spark.sql.streaming.numRecentProgressUpdates", "100000")
        .getOrCreate()
    )


def _windowed_counts(spark, args: argparse.Namespace):
    """The streaming plan: read, parse, observe, watermark, count per (partition, window)."""
    from pyspark.sql import functions as F

    source = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(args.max_offsets_per_trigger))
        .option("failOnDataLoss", "true")
        .load()
    )
    # The generator writes '2026-11-22T08:59:59.999Z'; XXX accepts the Z.
    parsed = source.select(
        F.col("partition").alias("source_partition"),
        F.from_json(
            F.col("value").cast("string"),
            "event_time TIMESTAMP",
            {"timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSXXX"},
        ).event_time.alias("event_time"),
    )
    partitions = list(range(args.partitions))
    per_partition = []
    for p in partitions:
        in_p = F.col("source_partition") == p
        per_partition += [
            # Epoch ms, not TIMESTAMP: a collected TIMESTAMP is a naive datetime in the local zone.
            F.unix_millis(F.max(F.when(in_p, F.col("event_time")))).alias(f"max_event_time_{p}"),
            F.count_if(in_p).alias(f"rows_{p}"),
        ]
    observed = parsed.observe(
        OBSERVATION,
        *per_partition,
        F.count(F.lit(1)).alias("rows"),
        F.count_if(F.col("event_time").isNull()).alias("unparsed"),
    )
    lateness = f"{args.allowed_lateness_ms} milliseconds"
    counts = (
        observed.withWatermark("event_time", lateness)
        .groupBy("source_partition", F.window("event_time", f"{args.window_ms} milliseconds"))
        .count()
    )
    return counts, partitions


def _batch_figures(progress, topic: str, partitions: list[int]) -> dict:
    """One batch's figures from its StreamingQueryProgress (offsets as [start, end) per partition)."""
    source = progress.sources[0]
    metrics = progress.observedMetrics.get(OBSERVATION)
    state = progress.stateOperators[0] if progress.stateOperators else None
    # The first batch has no start offset ("null"): it starts at the earliest, 0 on a fresh topic.
    start = (json.loads(source.startOffset) or {}).get(topic, {}) if source.startOffset else {}
    end = json.loads(source.endOffset)[topic]
    return {
        "batch_id": progress.batchId,
        "rows": progress.numInputRows,
        # The watermark this batch ran with (set from the batches before it).
        "watermark_ms": _parse_progress_time(progress.eventTime.get("watermark")),
        "offsets": {str(p): [start.get(str(p), 0), end[str(p)]] for p in partitions},
        "max_event_time_ms": {
            str(p): metrics[f"max_event_time_{p}"] for p in partitions if metrics and metrics[f"rows_{p}"]
        },
        "rows_per_partition": {str(p): metrics[f"rows_{p}"] if metrics else 0 for p in partitions},
        "unparsed": metrics["unparsed"] if metrics else 0,
        # Spark's metric counts rows after partial aggregation (per batch task and window), not records.
        "spark_rows_dropped_by_watermark": state.numRowsDroppedByWatermark if state else None,
        "seconds": progress.batchDuration / 1000,
    }


def _pending_in_state(spark, checkpoint: str, partitions: list[int]) -> dict[int, int]:
    """Counts of windows the aggregation still holds (not yet emitted) when the run stopped."""
    from pyspark.sql import functions as F

    state = spark.read.format("statestore").load(checkpoint)
    pending = {p: 0 for p in partitions}
    for row in state.groupBy(F.col("key.source_partition").alias("p")).agg(F.sum("value.count").alias("n")).collect():
        pending[row.p] = row.n
    return pending


def _parse_progress_time(text: str | None) -> int | None:
    """Progress times are ISO-8601 UTC strings such as '2026-11-22T08:50:00.000Z' → ms since the epoch."""
    if text is None:
        return None
    return round(datetime.fromisoformat(text).timestamp() * 1000)


if __name__ == "__main__":
    sys.exit(main())
