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
import os
from pathlib import Path

import msgspec

from expectations.hour_scope import hour_text
from tidemark.hour_report import HourReportUnreadable, decode_hour_report

log = logging.getLogger("tidemark.quality")


def hours_folder(report_dir: str | Path, stream: str) -> Path:
    return Path(report_dir) / stream / "hours"


def hour_report_path(report_dir: str | Path, stream: str, hour_ms: int) -> Path:
    """e.g. <report_dir>/telemetry/hours/2026-11-22T01Z.json (no ':' in file names)."""
    return hours_folder(report_dir, stream) / hour_report_name(hour_ms)


def hour_report_name(hour_ms: int) -> str:
    """e.g. 2026-11-22T01Z.json, the report's name in its folder."""
    return f"{hour_text(hour_ms)[:13]}Z.json"


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
    """The sealed hours with no report yet, or sealed again since their report, in order.

    Each report's ``sealed_at_ms`` is read once: the folder's index
    (``<report_dir>/<stream>/checked_hours_index.json``) remembers it with the file's identity
    (inode, modification time in ns, size), and a report whose file is not the one remembered
    (new, rewritten, edited) is read again. So reconciling a month of hours stats a file per
    hour and parses only the new ones. The index is only a memory of what the reports say: lost,
    unreadable or raced by another run, it is rebuilt from them."""
    folder = hours_folder(report_dir, stream)
    try:
        present = {entry.name: entry for entry in os.scandir(folder)}
    except FileNotFoundError:
        present = {}
    index_path = checked_hours_index_path(report_dir, stream)
    remembered = _read_index(index_path)
    known: dict[str, _ReadReport] = {}
    due = []
    for hour_ms, sealed_at_ms in sorted(seals.items()):
        name = hour_report_name(hour_ms)
        entry = present.get(name)
        if entry is None:
            due.append(hour_ms)
            continue
        try:
            report = _same_file(remembered.get(name), entry) or _read_report(folder / name)
        except HourReportUnreadable as error:
            log.warning({"event": "quality_hour_report_unreadable", "stream": stream, "error": str(error)})
            due.append(hour_ms)
            continue
        known[name] = report
        recorded = report.sealed_at_ms
        if sealed_at_ms is not None and (recorded is None or sealed_at_ms > recorded):
            due.append(hour_ms)
    if known != remembered:
        _write_index(index_path, known)
    return due


def checked_hours_index_path(report_dir: str | Path, stream: str) -> Path:
    return Path(report_dir) / stream / "checked_hours_index.json"


class _ReadReport(msgspec.Struct, frozen=True, array_like=True):
    """What reconciling read of one hour report: its file's identity and its ``sealed_at_ms``."""

    inode: int
    mtime_ns: int
    size: int
    sealed_at_ms: int | None


class _CheckedHoursIndex(msgspec.Struct, frozen=True):
    reports: dict[str, _ReadReport]  # file name in the hours folder → what it said


def _same_file(remembered: _ReadReport | None, entry: os.DirEntry) -> _ReadReport | None:
    """The remembered reading when ``entry`` is still the file it was read from."""
    if remembered is None:
        return None
    stat = entry.stat()
    same = (remembered.inode, remembered.mtime_ns, remembered.size) == (stat.st_ino, stat.st_mtime_ns, stat.st_size)
    return remembered if same else None


def _read_report(path: Path) -> _ReadReport:
    """The report in ``path`` read whole (HourReportUnreadable as read_hour_report), with the
    identity of the very file read: a report is replaced by a rename, never rewritten in place."""
    try:
        with open(path, "rb") as file:
            stat = os.fstat(file.fileno())
            report = decode_hour_report(file.read(), path)
    except OSError as error:
        raise HourReportUnreadable(f"{path}: cannot read the hour report ({error.strerror or error})") from None
    return _ReadReport(stat.st_ino, stat.st_mtime_ns, stat.st_size, report.sealed_at_ms)


def _read_index(path: Path) -> dict[str, _ReadReport]:
    try:
        return dict(msgspec.json.decode(path.read_bytes(), type=_CheckedHoursIndex).reports)
    except (OSError, msgspec.DecodeError):
        return {}  # none yet, or not one: rebuilt from the reports


def _write_index(path: Path, reports: dict[str, _ReadReport]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")  # one per process: runs may race
        partial.write_bytes(msgspec.json.encode(_CheckedHoursIndex(reports)))
        os.replace(partial, path)
    except OSError as error:  # a memory only: the next run reads the reports again
        log.warning({"event": "quality_hours_index_not_written", "path": str(path), "error": str(error)})
