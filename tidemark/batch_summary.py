"""What a persist batch learns from its range and summary rows, without reading its records.

The source yields, per partition of a batch, one range row (a tidemark.planned_range.PlannedRange
as text) and, after its records, one summary row per aligned step they were planned in (a
tidemark.step_counts.StepCounts as text). The persist batch collects those rows and, from them
alone, writes its ledger rows and reports its progress: these are the rules it applies.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict

from tidemark.batch_planner import watermark_after
from tidemark.planned_range import RANGE_ROW, PlannedRange
from tidemark.step_counts import StepCounts

HOUR_MS = 3_600_000


def read_batch_summary(rows: Iterable) -> tuple[dict[int, PlannedRange], dict[tuple[int, int], dict]]:
    """The batch's planned ranges by partition (from its range rows) and, per (partition, step
    id), the counts of its summary rows (a StepCounts as a dict). ``rows``: the batch's
    range and summary rows, anything with ``row_kind``, ``planned_range`` and ``step_counts`` (Spark's Row)."""
    ranges = {}
    step_stats = {}
    for row in rows:
        if row.row_kind == RANGE_ROW:
            planned = PlannedRange.from_text(row.planned_range)
            ranges[planned.partition] = planned
        else:
            # A replayed task yields the same counts again: the last one stands, never a sum.
            counts = StepCounts.from_text(row.step_counts)
            step_stats[(counts.partition, counts.seq)] = asdict(counts)
    return ranges, step_stats


def route_totals(step_stats: dict[tuple[int, int], dict]) -> dict[str, int]:
    """Records of the batch persisted to events (``records``), routed late and quarantined."""
    return {key: sum(s[key] for s in step_stats.values()) for key in ("records", "late", "quarantined")}


def partition_totals(step_stats: dict[tuple[int, int], dict]) -> dict[int, dict]:
    """The per-step counts summed per partition (min/max event time: over the steps)."""
    totals: dict[int, dict] = {}
    for (partition, _), counts in step_stats.items():
        total = totals.setdefault(
            partition,
            {
                "records": 0,
                "late": 0,
                "quarantined": 0,
                "data_records": 0,
                "min_event_time_ms": None,
                "max_event_time_ms": None,
            },
        )
        for key in ("records", "late", "quarantined", "data_records"):
            total[key] += counts[key]
        for key, pick in (("min_event_time_ms", min), ("max_event_time_ms", max)):
            if counts[key] is not None:
                total[key] = counts[key] if total[key] is None else pick(total[key], counts[key])
    return totals


def event_hours(totals: dict[int, dict]) -> set[int]:
    """The event-time hours (start, ms since the epoch, UTC) the batch's valid records span, per
    partition from its earliest to its latest event time (``totals``: ``partition_totals``)."""
    hours = set()
    for partition_stats in totals.values():
        first, last = partition_stats.get("min_event_time_ms"), partition_stats.get("max_event_time_ms")
        if first is not None and last is not None:
            hours.update(range(first - first % HOUR_MS, last + 1, HOUR_MS))
    return hours


def watermarks_after_steps(
    planned: PlannedRange, step_stats: dict[tuple[int, int], dict], max_out_of_orderness_ms: int
) -> list[int | None]:
    """W_p (ms) after each of ``planned.steps``, in order: W_p before the step, raised by its
    records' largest valid event time and by its cut at T (tidemark.batch_planner.watermark_after),
    and never below W_p after the partition's step before. None until a step has a W_p."""
    watermark, after_steps = None, []
    for step in planned.steps:
        counts = step_stats.get((planned.partition, step.seq), {})
        after = watermark_after(
            step.watermark_ms, step.next_record_at_least_ms, counts.get("max_event_time_ms"), max_out_of_orderness_ms
        )
        watermark = after if watermark is None or (after is not None and after > watermark) else watermark
        after_steps.append(watermark)
    return after_steps
