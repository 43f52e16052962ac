"""The figures of the catch-up benchmark, from the runs' measurements: ratios, targets, kept
records under Spark's plain watermark, latency percentiles. Pure: no Spark, no Kafka, no clock.

A run is a dict of its figures, or ``{"failed": "<reason>"}``. A ratio is written only when every
run it depends on succeeded; otherwise it says which run failed (``{"no_ratio": "(b) failed"}``),
so a failed peer can never leave a flattering or misleading number behind.

Times are ms since the epoch (UTC) unless a name says seconds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


def failed(run: Mapping | None) -> bool:
    """A run that did not happen (None) or ended with ``{"failed": ...}``."""
    return run is None or "failed" in run


def records_per_second(records: int, seconds: float) -> float:
    """Records over seconds, rounded to a whole record; ValueError for a non-positive duration
    (a run that took no time measured nothing)."""
    if seconds <= 0:
        raise ValueError(f"a run of {seconds} s measured nothing")
    return round(records / seconds)


def ratio(
    runs: Mapping[str, Mapping | None],
    numerator: str,
    denominators: Sequence[str],
    key: str,
    limit: float | None = None,
    at_least: float | None = None,
) -> dict:
    """``runs[numerator][key] / min(runs[d][key] for d in denominators)``, rounded to 2 decimals.

    With ``limit``, the ratio is a target: ``{"limit": limit, "result": "PASS"}`` when the ratio
    is at or below it, ``"FAIL"`` above; with ``at_least`` (a throughput), PASS at or above it.
    When any of the runs failed or is missing the result is ``{"no_ratio": "<run> failed"}``
    (runs named by their keys, in the order given), the target if any, and no value.
    """
    if limit is not None and at_least is not None:
        raise ValueError("a ratio has one target: limit (at most) or at_least, not both")
    names = [numerator, *denominators]
    limited = {"limit": limit} if limit is not None else {"at_least": at_least} if at_least is not None else {}
    missing = [name for name in names if failed(runs.get(name))]
    if missing:
        return {"no_ratio": f"{', '.join(missing)} failed", **limited}
    denominator = min(runs[name][key] for name in denominators)
    if denominator == 0:
        return {"no_ratio": f"{' / '.join(denominators)}: {key} is 0", **limited}
    value = round(runs[numerator][key] / denominator, 2)
    over = denominators[0] if len(denominators) == 1 else f"min({', '.join(denominators)})"
    figure = {"value": value, "of": f"{numerator} / {over}", "key": key}
    if limit is not None:
        figure.update(limit=limit, result="PASS" if value <= limit else "FAIL")
    if at_least is not None:
        figure.update(at_least=at_least, result="PASS" if value >= at_least else "FAIL")
    return figure


def target(value: float | None, limit: float, missing_reason: str | None = None) -> dict:
    """A figure held against an upper limit: PASS when ``value <= limit``. ``value`` None (the run
    that makes it failed) gives ``{"no_figure": missing_reason}``."""
    if value is None:
        return {"no_figure": missing_reason or "no value", "limit": limit}
    return {"value": value, "limit": limit, "result": "PASS" if value <= limit else "FAIL"}


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """The nearest-rank percentile: the smallest value with at least ``fraction`` of the values at
    or below it (p99 of 100 values is the 99th smallest). ``math.inf`` counts as a value (a record
    that never became visible), so a p99 over more than 1% missing records is infinite. None for
    no values."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(1, math.ceil(fraction * len(ordered))) - 1]


@dataclass
class WatermarkedBatch:
    """One batch of a query under Spark's plain global watermark (no window, no state).

    ``watermark_ms``: the watermark the batch runs with, max(earlier watermark, max event time of
    all EARLIER batches − delay); None before any batch held a row (Spark reports the epoch).
    A row of the batch is kept when its event time >= watermark_ms, dropped otherwise.
    """

    batch_id: int
    watermark_ms: int | None
    kept: dict[int, int] = field(default_factory=dict)
    dropped: dict[int, int] = field(default_factory=dict)


def replay_plain_watermark(
    batches: Sequence[Mapping], event_times: Mapping[int, Sequence[int]], delay_ms: int
) -> list[WatermarkedBatch]:
    """Spark's global watermark (withWatermark(event_time, delay)) replayed over the batches a
    query made, without a window: a row is dropped when its event time < the watermark of the
    batch it is in. (spark_watermark_emulation.replay is the windowed variant, where a row is
    dropped once its window was emitted.)

    ``batches``: {"batch_id", "offsets": {"<partition>": [start, end)}} in any order;
    ``event_times``: every record's event time (ms) per partition, indexed by offset (a fresh,
    non-transactional topic: offsets start at 0 and hold one record each).
    """
    watermark_ms: int | None = None
    replayed = []
    for batch in sorted(batches, key=lambda b: b["batch_id"]):
        result = WatermarkedBatch(batch["batch_id"], watermark_ms)
        batch_max_ms = None
        for partition_text, (start, end) in batch["offsets"].items():
            partition = int(partition_text)
            rows = event_times[partition][start:end]
            dropped = 0 if watermark_ms is None else sum(1 for t in rows if t < watermark_ms)
            result.dropped[partition] = dropped
            result.kept[partition] = len(rows) - dropped
            if rows:
                batch_max_ms = max(rows) if batch_max_ms is None else max(batch_max_ms, max(rows))
        if batch_max_ms is not None:
            # Set at the end of the batch, used from the next one on; it never goes back.
            candidate = batch_max_ms - delay_ms
            watermark_ms = candidate if watermark_ms is None else max(watermark_ms, candidate)
        replayed.append(result)
    return replayed


def watermarks_from_maxima(batches: Sequence[Mapping], delay_ms: int) -> dict[int, int | None]:
    """The watermark every batch runs with, from the per-partition max event times the query
    observed itself ({"batch_id", "max_event_time_ms": {"<partition>": ms}}): a cross-check of
    the record-level replay, which must give the same watermarks."""
    watermark_ms: int | None = None
    watermarks = {}
    for batch in sorted(batches, key=lambda b: b["batch_id"]):
        watermarks[batch["batch_id"]] = watermark_ms
        maxima = [t for t in batch["max_event_time_ms"].values() if t is not None]
        if maxima:
            candidate = max(maxima) - delay_ms
            watermark_ms = candidate if watermark_ms is None else max(watermark_ms, candidate)
    return watermarks


def totals_per_partition(per_batch: Sequence[Mapping[int, int]]) -> dict[int, int]:
    """Sum per partition over batches ({partition: n} each)."""
    totals: dict[int, int] = {}
    for counts in per_batch:
        for partition, n in counts.items():
            totals[partition] = totals.get(partition, 0) + n
    return dict(sorted(totals.items()))
