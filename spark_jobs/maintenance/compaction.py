"""Compaction of the events table's sealed hours (tidemark.compaction_plan says which), and of
the small tables every reader opens whole.

The hours of one day are one OPTIMIZE with a partition predicate (``event_date = D AND
event_hour IN (...)``): Delta rewrites each hour's small files into files of its target size
and commits ``dataChange=false``, so the rows, their order of arrival and every reader's answer
stay as they were. One commit per day, not per hour: a daily run compacts 24 hours, and each
OPTIMIZE costs a Spark job, a snapshot update and a commit whatever it rewrites (24 of them took
about 23 s of tiny work; see docs/operations/lake-maintenance.md). Delta's conflict detection
decides what a concurrent writer means: a live append (blind) never conflicts; a recovery's or
a backfill's insert-only MERGE into one of the hours can, and then whichever commits second
retries. This side retries the day a few times and then yields it to the next run
(spark_jobs.maintenance.conflict_retry): a compaction may always wait, a writer of records
should not.

The ledger and the seals gain a small file per commit, and a reader that opens them whole (the
persist look, every quality run, the watermark page) pays about 1.5 ms a file with pyarrow: on
the aging benchmark's lake, the files of the ledger cost a quality run more than its rows. Each
maintenance run compacts them whole once they hold ``compact_min_files`` files, with the same
retry-then-yield rule against a concurrent writer; that is what keeps them small (tidemark's
sessions turn Delta's auto compaction off: connectors.spark_session).

The file counts come from the Delta log (deltalake: no Spark job, connectors.maintenance_look),
the compaction's own figures from its commit's metrics.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from connectors.maintenance_look import SMALL_TABLES, files_per_hour, sealed_hours, table_files
from spark_jobs.maintenance.conflict_retry import retried
from tidemark.compaction_plan import hours_to_compact
from tidemark.event_time_text import format_event_time
from tidemark.maintenance_result import CompactedHours, CompactedTable
from tidemark.stream_config import StreamConfig

log = logging.getLogger("tidemark.maintenance")


def compact_sealed_hours(spark, stream: StreamConfig) -> list[CompactedHours]:
    """Compact every sealed hour of ``stream``'s events with ``maintenance.compact_min_files``
    files or more, one commit per day, oldest day first."""
    events = stream.table_path("events")
    hours = hours_to_compact(files_per_hour(events), sealed_hours(stream), stream.maintenance.compact_min_files)
    days: dict[str, list[int]] = {}
    for hour_ms in hours:
        days.setdefault(datetime.fromtimestamp(hour_ms / 1000, UTC).date().isoformat(), []).append(hour_ms)
    return [_compact_day(spark, events, day, day_hours) for day, day_hours in days.items()]


def _compact_day(spark, events_path: str, day: str, hours_ms: list[int]) -> CompactedHours:
    from delta.tables import DeltaTable

    of_day = ", ".join(str(datetime.fromtimestamp(h / 1000, UTC).hour) for h in hours_ms)
    predicate = f"event_date = '{day}' AND event_hour IN ({of_day})"
    hours = tuple(format_event_time(h) for h in hours_ms)

    def compact():
        metrics = DeltaTable.forPath(spark, events_path).optimize().where(predicate).executeCompaction()
        return metrics.select("metrics.numFilesAdded", "metrics.numFilesRemoved").first()

    row, retries = retried(compact, "compaction_conflict", {"date": day, "hours": len(hours)})
    if row is None:
        return CompactedHours(day, hours, 0, 0, retries, yielded=True)
    compacted = CompactedHours(day, hours, int(row.numFilesRemoved), int(row.numFilesAdded), retries)
    log.info({"event": "hours_compacted", **compacted.to_json()})
    return compacted


def compact_small_tables(spark, stream: StreamConfig) -> list[CompactedTable]:
    """Compact the ledger and the seals whole, each that holds ``maintenance.compact_min_files``
    files or more; one commit each."""
    from delta.tables import DeltaTable

    compacted = []
    for table in SMALL_TABLES:
        path = stream.table_path(table)
        if table_files(path) < stream.maintenance.compact_min_files:
            continue

        def compact(path=path):
            metrics = DeltaTable.forPath(spark, path).optimize().executeCompaction()
            return metrics.select("metrics.numFilesAdded", "metrics.numFilesRemoved").first()

        row, retries = retried(compact, "compaction_conflict", {"table": table})
        if row is None:
            compacted.append(CompactedTable(table, 0, 0, retries, yielded=True))
            continue
        done = CompactedTable(table, int(row.numFilesRemoved), int(row.numFilesAdded), retries)
        log.info({"event": "table_compacted", **done.to_json()})
        compacted.append(done)
    return compacted
