"""Which sealed hours have been checked: one JSON file per checked hour, and what is left to do.

A quality run writes ``<report_dir>/<stream>/hours/<YYYY-MM-DDTHH>Z.json`` for every hour it
checked (passed or failed): a tidemark.hour_report.HourReport, holding the run's name, when it
ran, the hour's figures per partition and the newest ``sealed_at`` the seals table had for the
hour. That file is the memory: reconciling lists the hours of the seals table that have no file,
or whose seal is newer than the one the file recorded (the hour was amended after it was
checked). Asset events may be lost (the Kafka trigger commits before it stores), the seals table
is the truth, so reconciling needs nothing but the seals table and these files. A run that asks
for hours explicitly (after a recovery) writes the files again. A file that cannot be read
(hand-edited, from an incompatible version) is not trusted: its hour is checked again, which
rewrites it, and a warning names the file and why (as expectations.checked_versions does).
"""

from __future__ import annotations

import logging
from pathlib import Path

from expectations.hour_scope import hour_text
from tidemark.hour_report import HourReportUnreadable, read_hour_report

log = logging.getLogger("tidemark.quality")


def hours_folder(report_dir: str | Path, stream: str) -> Path:
    return Path(report_dir) / stream / "hours"


def hour_report_path(report_dir: str | Path, stream: str, hour_ms: int) -> Path:
    """e.g. <report_dir>/telemetry/hours/2026-11-22T01Z.json (no ':' in file names)."""
    return hours_folder(report_dir, stream) / f"{hour_text(hour_ms)[:13]}Z.json"


def seals_by_hour(seals_frame) -> dict[int, int | None]:
    """hour (ms) → the newest sealed_at (ms) of the seals table's rows for it."""
    from pyspark.sql import functions as F

    rows = (
        seals_frame.groupBy(F.unix_millis("hour").alias("hour_ms"))
        .agg(F.max(F.unix_millis("sealed_at")).alias("sealed_at_ms"))
        .collect()
    )
    return {row.hour_ms: row.sealed_at_ms for row in rows if row.hour_ms is not None}


def seals_of(seals) -> dict[int, int | None]:
    """seals_by_hour of the seals table as a pyarrow Table (columns hour, sealed_at), read
    without Spark (expectations.lake_snapshot)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def millis(column: str) -> list:
        micros = pc.cast(pc.cast(seals.column(column), pa.timestamp("us", tz="UTC")), pa.int64())
        return [None if v is None else v // 1000 for v in micros.to_pylist()]

    newest: dict[int, int | None] = {}
    for hour_ms, sealed_at_ms in zip(millis("hour"), millis("sealed_at")):
        if hour_ms is None:
            continue
        known = newest.get(hour_ms)
        newest[hour_ms] = (
            sealed_at_ms if known is None else (known if sealed_at_ms is None else max(known, sealed_at_ms))
        )
    return newest


def unchecked_sealed_hours(seals: dict[int, int | None], report_dir: str | Path, stream: str) -> list[int]:
    """The sealed hours with no report yet, or sealed again since their report, in order."""
    due = []
    for hour_ms, sealed_at_ms in sorted(seals.items()):
        path = hour_report_path(report_dir, stream, hour_ms)
        if not path.exists():
            due.append(hour_ms)
            continue
        try:
            recorded = read_hour_report(path).sealed_at_ms
        except HourReportUnreadable as error:
            log.warning({"event": "quality_hour_report_unreadable", "stream": stream, "error": str(error)})
            due.append(hour_ms)
            continue
        if sealed_at_ms is not None and (recorded is None or sealed_at_ms > recorded):
            due.append(hour_ms)
    return due
