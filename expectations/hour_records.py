"""Records per partition and event-time hour: events and late rows counted by their event time.

A record of hour H is one whose event time is in [H, H + 1h) (UTC), whether it was persisted to
events or routed to late: both are the hour's data. The events table is partitioned by
(event_date, event_hour), so the scan reads only the days asked for. These are the sweep's
Spark readers; expectations.delta_lake_facts counts the same without Spark.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from expectations.ledger_entries import HOUR_MS


@dataclass(frozen=True)
class HourCounts:
    events: int
    late: int

    @property
    def records(self) -> int:
        return self.events + self.late


def hour_bucket(column: str = "event_time"):
    """The start of the column's event-time hour, ms since the epoch."""
    from pyspark.sql import functions as F

    return F.floor(F.unix_millis(F.col(column)) / HOUR_MS).cast("long") * HOUR_MS


def in_hours(frame, hours_ms: list[int], partitioned: bool):
    """Rows of ``frame`` whose event time falls in one of ``hours_ms``; ``partitioned`` frames
    (events) are first pruned to their event_date partitions."""
    from pyspark.sql import functions as F

    if partitioned:
        dates = sorted({datetime.fromtimestamp(h / 1000, UTC).date() for h in hours_ms})
        frame = frame.filter(F.col("event_date").isin(dates))
    return frame.withColumn("hour_ms", hour_bucket()).filter(F.col("hour_ms").isin(hours_ms))


def count_by_hour(read_table, hours_ms: list[int]) -> dict[tuple[int, int], HourCounts]:
    """(partition, hour) → events and late rows, for every hour in ``hours_ms`` that has any."""
    from pyspark.sql import functions as F

    if not hours_ms:
        return {}
    events = in_hours(read_table("events"), hours_ms, partitioned=True).select(
        "source_partition", "hour_ms", F.lit(1).alias("e"), F.lit(0).alias("l")
    )
    late = in_hours(read_table("late"), hours_ms, partitioned=False).select(
        "source_partition", "hour_ms", F.lit(0).alias("e"), F.lit(1).alias("l")
    )
    counted = (
        events.unionByName(late)
        .groupBy("source_partition", "hour_ms")
        .agg(F.sum("e").alias("events"), F.sum("l").alias("late"))
        .collect()
    )
    return {(row.source_partition, row.hour_ms): HourCounts(row.events, row.late) for row in counted}


def with_history(hours_ms: list[int], history_hours: int) -> list[int]:
    """The hours asked for and the ``history_hours`` before each."""
    return sorted({h - back * HOUR_MS for h in hours_ms for back in range(history_hours + 1)})
