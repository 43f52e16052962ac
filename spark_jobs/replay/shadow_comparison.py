"""Compare a shadow table set's ``events`` with live's over position ranges (tidemark.reconciliation).

One full outer join on (source_partition, source_offset), restricted to the ranges the backfill
read; what comes back to the driver is one row per (partition, event hour) and the ranges of
positions missing in live, never the records.

Missing rows become ranges as gaps and islands. Kafka's offsets are dense: consecutive offsets
share offset − rank. Kinesis sequence numbers are sparse (and 64-digit text in the lake), so
consecutive means consecutive among the shadow's own rows: a run of missing rows with no row
live holds between them, by rank in the shadow's order, is one range [first missing, last
missing + 1).
"""

from __future__ import annotations

from spark_jobs.lake.tables import LakeTables
from tidemark.offset_coverage import OffsetRange
from tidemark.reconciliation import HourComparison, Reconciliation
from tidemark.stream_config import StreamConfig


def compare_with_live(spark, stream: StreamConfig, shadow: str, ranges: dict[int, tuple[int, int]]) -> Reconciliation:
    """Compare ``shadow``'s events with the stream's over ``ranges`` ({partition: (start, end)})."""
    from pyspark.sql import functions as F

    if not ranges:
        return Reconciliation(stream.name, (), {})
    live, backfilled = LakeTables(spark, stream), LakeTables(spark, stream, shadow=shadow)
    key = ["source_partition", "source_offset"]
    within = live.offset_filter(ranges)

    def keyed(tables: LakeTables, side: str):
        return (
            tables.read("events")
            .where(within)
            .select(*key, F.unix_millis(F.date_trunc("hour", "event_time")).alias(f"{side}_hour"))
        )

    elsewhere = (
        live.read("late")
        .where(within)
        .select(*key)
        .unionByName(live.read("quarantine").where(within).select(*key))
        .withColumn("in_live_elsewhere", F.lit(True))
    )
    joined = (
        keyed(backfilled, "shadow")
        .join(keyed(live, "live"), key, "full_outer")
        .join(elsewhere, key, "left")
        .withColumn("hour_ms", F.coalesce("shadow_hour", "live_hour"))
        .withColumn("only_shadow", F.col("live_hour").isNull())
    )
    missing = F.col("only_shadow") & F.col("in_live_elsewhere").isNull()
    hours = (
        joined.groupBy("source_partition", "hour_ms")
        .agg(
            F.count("live_hour").alias("live"),
            F.count("shadow_hour").alias("shadow"),
            F.sum(F.when(missing, 1).otherwise(0)).alias("missing_in_live"),
            F.sum(F.when(F.col("shadow_hour").isNull(), 1).otherwise(0)).alias("extra_in_live"),
            F.sum(F.when(F.col("only_shadow") & F.col("in_live_elsewhere"), 1).otherwise(0)).alias(
                "routed_differently"
            ),
        )
        .orderBy("source_partition", "hour_ms")
        .collect()
    )
    missing_ranges = missing_position_ranges(joined, missing, live.positions)
    return Reconciliation(
        stream.name,
        tuple(
            HourComparison.of_hour_ms(
                r.source_partition,
                r.hour_ms,
                r.live,
                r.shadow,
                missing_in_live=r.missing_in_live,
                extra_in_live=r.extra_in_live,
                routed_differently=r.routed_differently,
            )
            for r in hours
        ),
        {p: tuple(rs) for p, rs in missing_ranges.items()},
    )


def missing_position_ranges(joined, missing, positions) -> dict[int, list[OffsetRange]]:
    """The positions of ``joined``'s ``missing`` rows as ranges per partition (gaps and islands)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    by_position = Window.partitionBy("source_partition").orderBy("source_offset")
    if positions.dense:
        # Consecutive offsets share offset − rank.
        islands = joined.where(missing).withColumn("island", F.col("source_offset") - F.row_number().over(by_position))
    else:
        # Consecutive among the shadow's rows share (rank among them) − (rank among the missing).
        islands = (
            joined.where(F.col("shadow_hour").isNotNull())
            .withColumn("shadow_rank", F.row_number().over(by_position))
            .where(missing)
            .withColumn("island", F.col("shadow_rank") - F.row_number().over(by_position))
        )
    rows = (
        islands.groupBy("source_partition", "island")
        .agg(F.min("source_offset").alias("first"), F.max("source_offset").alias("last"))
        .orderBy("source_partition", "first")
        .collect()
    )
    ranges: dict[int, list[OffsetRange]] = {}
    for row in rows:
        first, last = positions.from_column(row.first), positions.from_column(row.last)
        ranges.setdefault(row.source_partition, []).append(OffsetRange(first, last + 1))
    return ranges
