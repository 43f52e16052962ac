"""Gaps in an hour, per partition: a silent hour, and long silences in event time within it.

Facts, one row per (hour, partition):

- ``records_in_hour``: events + late rows with event time in [H, H + 1h);
- ``active_history_hours``: how many of the ``history_hours`` hours before H had any such row
  for the partition (its own recent history: "a partition that normally produces");
- ``longest_event_time_gap_ms``: the longest span between consecutive event times of the
  partition within H (null with fewer than two records), and where it was.

Rules: a partition active in at least 80% of its history hours has records in H (a *silent
hour* otherwise), and the longest event-time gap is at most quality.event_time_gap. Both are
warnings about the source (WARN): a quiet producer is not a loss in the lake; completeness and
retention are what find losses. Offset holes in the events table are the completeness check's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from expectations.check_family import CheckFamily, FamilyOutcome, Finding, rule, unexpected_rows
from expectations.hour_records import HourCounts, in_hours
from expectations.hour_scope import hour_text
from expectations.ledger_entries import HOUR_MS
from expectations.quality_status import QualityStatus
from tidemark.duration import format_duration_ms
from tidemark.event_time_text import format_event_time
from tidemark.stream_config import QualitySettings

NAME = "gaps"
NORMALLY_ACTIVE_SHARE = 0.8


@dataclass(frozen=True, order=True)
class EventTimeGap:
    """A span between two consecutive event times of a partition within an hour (ms, UTC).

    Gaps compare field by field in this order, and an hour's longest gap is its largest: among
    equal lengths, the latest. Both fact engines pick it by this order (Spark: the max of a struct
    of these fields; numpy: a lexsort by them), so they cannot disagree on a tie."""

    length_ms: int
    after_ms: int  # the event time before the gap
    before_ms: int  # the event time after it


GAP_ORDER = tuple(field.name for field in fields(EventTimeGap))  # most significant first


@dataclass(frozen=True)
class GapFacts:
    hour_ms: int
    partition: int
    counts: HourCounts
    active_history_hours: int
    longest_gap: EventTimeGap | None

    def row(self, row_id: int) -> tuple:
        gap = self.longest_gap
        return (
            row_id,
            hour_text(self.hour_ms),
            self.partition,
            self.counts.records,
            self.active_history_hours,
            None if gap is None else gap.length_ms,
            None if gap is None else format_event_time(gap.after_ms),
            None if gap is None else format_event_time(gap.before_ms),
        )


def normally_active_hours(settings: QualitySettings) -> int:
    """How many of the history hours must have had records for a silent hour to be reported."""
    return math.ceil(NORMALLY_ACTIVE_SHARE * settings.history_hours)


def family(settings: QualitySettings) -> CheckFamily:
    import great_expectations.expectations as gxe
    from great_expectations.expectations.row_conditions import Column

    threshold = normally_active_hours(settings)
    return CheckFamily(
        name=NAME,
        columns=(
            ("row_id", "INT"),
            ("hour", "STRING"),
            ("source_partition", "INT"),
            ("records_in_hour", "BIGINT"),
            ("active_history_hours", "INT"),
            ("longest_event_time_gap_ms", "BIGINT"),
            ("gap_after", "STRING"),
            ("gap_before", "STRING"),
        ),
        index_columns=("row_id", "hour", "source_partition"),
        expectations=(
            rule(
                gxe.ExpectColumnValuesToBeBetween,
                "no_silent_hour",
                f"A partition that had records in at least {threshold} of its previous {settings.history_hours} "
                f"hours has records in this hour.",
                column="records_in_hour",
                min_value=1,
                row_condition=Column("active_history_hours") >= threshold,
            ),
            rule(
                gxe.ExpectColumnValuesToBeBetween,
                "event_time_gap_within_threshold",
                f"Consecutive event times of a partition within the hour are at most "
                f"{format_duration_ms(settings.event_time_gap_ms)} apart.",
                column="longest_event_time_gap_ms",
                min_value=0,
                max_value=settings.event_time_gap_ms,
            ),
        ),
    )


def longest_gaps(read_table, hours_ms: list[int]) -> dict[tuple[int, int], EventTimeGap]:
    """(partition, hour) → the longest gap between consecutive event times within the hour."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if not hours_ms:
        return {}
    times = [
        in_hours(read_table(table), hours_ms, partitioned=table == "events").select(
            "source_partition", "hour_ms", F.unix_millis("event_time").alias("t")
        )
        for table in ("events", "late")
    ]
    ordered = Window.partitionBy("source_partition", "hour_ms").orderBy("t")
    gap = {"length_ms": F.col("t") - F.col("previous"), "after_ms": F.col("previous"), "before_ms": F.col("t")}
    gaps = (
        times[0]
        .unionByName(times[1])
        .withColumn("previous", F.lag("t").over(ordered))
        .filter(F.col("previous").isNotNull())
        .groupBy("source_partition", "hour_ms")
        .agg(F.max(F.struct(*(gap[name].alias(name) for name in GAP_ORDER))).alias("gap"))
        .collect()
    )
    return {(row.source_partition, row.hour_ms): EventTimeGap(**row.gap.asDict()) for row in gaps}


def facts(
    partitions: list[int],
    hours_ms: list[int],
    counts: dict[tuple[int, int], HourCounts],
    gaps: dict[tuple[int, int], EventTimeGap],
    settings: QualitySettings,
) -> list[GapFacts]:
    rows = []
    for hour_ms in hours_ms:
        history = [hour_ms - back * HOUR_MS for back in range(1, settings.history_hours + 1)]
        for partition in partitions:
            active = sum(1 for h in history if counts.get((partition, h), HourCounts(0, 0)).records > 0)
            rows.append(
                GapFacts(
                    hour_ms,
                    partition,
                    counts.get((partition, hour_ms), HourCounts(0, 0)),
                    active,
                    gaps.get((partition, hour_ms)),
                )
            )
    return rows


def findings(outcome: FamilyOutcome, rows: list[GapFacts], settings: QualitySettings) -> list[Finding]:
    found = []
    for fact in unexpected_rows(outcome, "no_silent_hour", rows):
        found.append(
            Finding(
                fact.partition,
                NAME,
                QualityStatus.WARN,
                f"hour {hour_text(fact.hour_ms)}: silent hour, no records although the partition had records in "
                f"{fact.active_history_hours} of the previous {settings.history_hours} hours",
                hour_ms=fact.hour_ms,
            )
        )
    for fact in unexpected_rows(outcome, "event_time_gap_within_threshold", rows):
        gap = fact.longest_gap
        found.append(
            Finding(
                fact.partition,
                NAME,
                QualityStatus.WARN,
                f"hour {hour_text(fact.hour_ms)}: no event time between {format_event_time(gap.after_ms)} and "
                f"{format_event_time(gap.before_ms)} ({format_duration_ms(gap.length_ms)}, threshold "
                f"{format_duration_ms(settings.event_time_gap_ms)})",
                hour_ms=fact.hour_ms,
            )
        )
    return found
