"""Compaction of the events table's sealed hours (tidemark.compaction_plan says which).

Each hour is one OPTIMIZE with a partition predicate: Delta rewrites that hour's small files into
files of its target size and commits ``dataChange=false``, so the rows, their order of arrival
and every reader's answer stay as they were. Delta's conflict detection decides what a
concurrent writer means: a live append (blind) never conflicts; a recovery's or a backfill's
insert-only MERGE into the same hour can, and then whichever commits second retries. This side
retries a few times and then yields the hour to the next run (spark_jobs.maintenance.conflict_retry):
a compaction may always wait, a writer of records should not.

The file count per hour comes from the Delta log (deltalake: no Spark job), the compaction's
own figures from its commit's metrics.
"""

from __future__ import annotations

import logging
from datetime import UTC, date, datetime

from spark_jobs.maintenance.conflict_retry import retried
from tidemark.compaction_plan import HOUR_MS, hours_to_compact
from tidemark.event_time_text import format_event_time
from tidemark.maintenance_result import CompactedHour
from tidemark.stream_config import StreamConfig

log = logging.getLogger("tidemark.maintenance")


def compact_sealed_hours(spark, stream: StreamConfig) -> list[CompactedHour]:
    """Compact every sealed hour of ``stream``'s events with ``maintenance.compact_min_files`` files or more."""
    events = stream.table_path("events")
    hours = hours_to_compact(files_per_hour(events), sealed_hours(stream), stream.maintenance.compact_min_files)
    return [_compact_hour(spark, events, hour) for hour in hours]


def files_per_hour(events_path: str) -> dict[int, int]:
    """How many files each event-time hour (ms) of the events table holds now."""
    import pyarrow as pa

    from connectors.lake_storage import open_delta_table

    actions = pa.table(open_delta_table(events_path).get_add_actions(flatten=True))
    counts: dict[int, int] = {}
    for day, hour in zip(
        actions.column("partition.event_date").to_pylist(),
        actions.column("partition.event_hour").to_pylist(),
        strict=True,
    ):
        start = _hour_ms(day, hour)
        counts[start] = counts.get(start, 0) + 1
    return counts


def sealed_hours(stream: StreamConfig) -> list[int]:
    """The sealed hours' starts (ms), from the seals table."""
    from connectors.lake_storage import open_delta_table

    hours = open_delta_table(stream.table_path("seals")).to_pyarrow_table(columns=["hour"]).column("hour")
    return sorted({int(value.timestamp() * 1000) for value in hours.to_pylist() if value is not None})


def _compact_hour(spark, events_path: str, hour_ms: int) -> CompactedHour:
    from delta.tables import DeltaTable

    start = datetime.fromtimestamp(hour_ms / 1000, UTC)
    predicate = f"event_date = '{start.date().isoformat()}' AND event_hour = {start.hour}"
    hour = format_event_time(hour_ms)

    def compact():
        metrics = DeltaTable.forPath(spark, events_path).optimize().where(predicate).executeCompaction()
        return metrics.select("metrics.numFilesAdded", "metrics.numFilesRemoved").first()

    row, retries = retried(compact, "compaction_conflict", {"hour": hour})
    if row is None:
        return CompactedHour(hour, 0, 0, retries, yielded=True)
    compacted = CompactedHour(hour, int(row.numFilesRemoved), int(row.numFilesAdded), retries)
    log.info({"event": "hour_compacted", **compacted.to_json()})
    return compacted


def _hour_ms(day: date, hour: int) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000) + hour * HOUR_MS
