"""Compaction of the events table's sealed hours (tidemark.compaction_plan says which).

Each hour is one OPTIMIZE with a partition predicate: Delta rewrites that hour's small files into
files of its target size and commits ``dataChange=false``, so the rows, their order of arrival
and every reader's answer stay as they were. Delta's conflict detection decides what a
concurrent writer means: a live append (blind) never conflicts; a recovery's or a backfill's
insert-only MERGE into the same hour can, and then whichever commits second retries. This side
retries a few times and then yields the hour to the next run (spark_jobs.maintenance.conflict_retry):
a compaction may always wait, a writer of records should not.

The file count per hour comes from the Delta log (deltalake: no Spark job,
connectors.maintenance_look), the compaction's own figures from its commit's metrics.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from connectors.maintenance_look import files_per_hour, sealed_hours
from spark_jobs.maintenance.conflict_retry import retried
from tidemark.compaction_plan import hours_to_compact
from tidemark.event_time_text import format_event_time
from tidemark.maintenance_result import CompactedHour
from tidemark.stream_config import StreamConfig

log = logging.getLogger("tidemark.maintenance")


def compact_sealed_hours(spark, stream: StreamConfig) -> list[CompactedHour]:
    """Compact every sealed hour of ``stream``'s events with ``maintenance.compact_min_files`` files or more."""
    events = stream.table_path("events")
    hours = hours_to_compact(files_per_hour(events), sealed_hours(stream), stream.maintenance.compact_min_files)
    return [_compact_hour(spark, events, hour) for hour in hours]


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
