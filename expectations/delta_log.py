"""The Delta log of a stream's persisted tables as the damage rules read it (expectations.lake_damage):
the commit files written since the versions last checked, what removed files held, and files the
tables reference that are gone.

Commit files are read straight from ``<table>/_delta_log/<20-digit version>.json`` through the
Hadoop file system of the lake (local disk or S3), one small read per commit: no Spark job, no
snapshot. Checkpoints are not read: they hold the table's state, not what a commit removed. When
the commits since the last check are no longer all there (Delta's log cleanup keeps 30 days by
default), or the table's newest version is older than the one checked (the table was replaced),
the scan says the log is gone and every sealed hour is checked again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from expectations.lake_damage import (
    DAMAGE_TABLES,
    CommitDamage,
    DamageKind,
    FileFootprint,
    RemovedFile,
    log_damage,
    log_gone,
    parse_commit,
    uncounted_removes,
)
from tidemark.log_position import position_value
from tidemark.stream_config import StreamConfig

_COMMIT_FILE = re.compile(r"^(\d{20})\.json$")
_PARTITION_DIR = re.compile(r"(?:^|/)([A-Za-z_][A-Za-z0-9_]*)=([^/]*)(?=/)")


@dataclass(frozen=True)
class LogScan:
    """What the log says since the last check: the damage (hours not known yet), and the newest
    version of each table it read up to (the next state)."""

    damage: tuple[CommitDamage, ...]
    versions: dict[str, int] = field(default_factory=dict)
    commits_read: int = 0


class DeltaLogFiles:
    """The commit files of one table's ``_delta_log``."""

    def __init__(self, spark, table_path: str):
        self._spark = spark
        self.table_path = table_path.rstrip("/")
        jvm = spark.sparkContext._jvm
        self._log = jvm.org.apache.hadoop.fs.Path(f"{self.table_path}/_delta_log")
        self._fs = self._log.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())

    def versions(self) -> list[int]:
        """The versions with a commit file, ascending ([] when the table has no log)."""
        if not self._fs.exists(self._log):
            return []
        names = (status.getPath().getName() for status in self._fs.listStatus(self._log))
        return sorted(int(match.group(1)) for name in names if (match := _COMMIT_FILE.match(name)))

    def read(self, version: int) -> str:
        path = self._spark.sparkContext._jvm.org.apache.hadoop.fs.Path(self._log, f"{version:020d}.json")
        stream = self._fs.open(path)
        try:
            return self._spark.sparkContext._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
        finally:
            stream.close()

    def exists(self, relative_path: str) -> bool:
        jvm = self._spark.sparkContext._jvm
        return bool(self._fs.exists(jvm.org.apache.hadoop.fs.Path(f"{self.table_path}/{relative_path}")))


def scan_log(spark, stream: StreamConfig, since: Mapping[str, int] | None) -> LogScan:
    """The damage in the commits after ``since[table]`` up to each table's newest version.

    ``since`` None (no state yet): nothing is damage, the scan only records where the tables are.
    A table missing from ``since`` starts from its newest version too."""
    damage: list[CommitDamage] = []
    versions: dict[str, int] = {}
    read = 0
    for table in DAMAGE_TABLES:
        files = DeltaLogFiles(spark, stream.table_path(table))
        present = files.versions()
        if not present:
            continue
        versions[table] = present[-1]
        wanted = versions_to_read(present, None if since is None else since.get(table))
        if isinstance(wanted, str):
            damage.append(log_gone(table, wanted))
            continue
        commits = [parse_commit(table, version, files.read(version)) for version in wanted]
        read += len(commits)
        damage.extend(log_damage(commits, file_row_counts(spark, files, uncounted_removes(commits))))
        vacuums = [commit for commit in commits if commit.operation.upper().startswith("VACUUM")]
        if vacuums:
            damage.extend(missing_files(spark, stream, table, "VACUUM", vacuums[-1].version))
    return LogScan(tuple(damage), versions, read)


def versions_to_read(present: list[int], last: int | None) -> range | str:
    """The versions after ``last`` up to the newest of ``present`` (the commit files there, ascending),
    or why they cannot be read. ``last`` None: nothing to read (the scan starts here)."""
    newest = present[-1]
    if last is None or last == newest:
        return range(0)
    if newest < last:
        return f"TABLE REPLACED (newest version {newest}, checked up to {last})"
    wanted = range(last + 1, newest + 1)
    have = set(present)
    missing = [version for version in wanted if version not in have]
    if missing:
        return f"LOG CLEANED UP (version {missing[0]} is no longer in the log)"
    return wanted


def file_row_counts(spark, files: DeltaLogFiles, paths: list[str]) -> dict[str, int]:
    """Rows of each file in ``paths`` (relative to the table) that still exists, counted from the
    file itself: one Spark job, only for rewrites whose removes carry no stats."""
    from pyspark.sql import functions as F

    existing = [p for p in paths if files.exists(p)]
    if not existing:
        return {}
    rows = (
        spark.read.parquet(*(f"{files.table_path}/{p}" for p in existing))
        .groupBy(F.input_file_name().alias("file"))
        .count()
        .collect()
    )
    return {_relative(row.file, files.table_path): row["count"] for row in rows}


def missing_files(
    spark, stream: StreamConfig, table: str, operation: str = "FILES MISSING", version: int | None = None
) -> list[CommitDamage]:
    """Files the table's current snapshot references that are gone (a VACUUM with too short a
    retention that raced a writer, or files deleted by hand): one damage naming them, or []."""
    path = stream.table_path(table)
    files = DeltaLogFiles(spark, path)
    gone = []
    for uri in spark.read.format("delta").load(path).inputFiles():
        relative = _relative(uri, path)
        if not files.exists(relative):
            gone.append(RemovedFile(relative, partition_values_of(relative), True, None, None))
    if not gone:
        return []
    return [CommitDamage(table, version, operation, None, DamageKind.FILES_MISSING, None, tuple(gone))]


def partition_values_of(relative_path: str) -> tuple[tuple[str, str], ...]:
    """'event_date=2026-11-22/event_hour=1/part-0.parquet' → (('event_date', '2026-11-22'), ('event_hour', '1'))."""
    return tuple(sorted((m.group(1), m.group(2)) for m in _PARTITION_DIR.finditer(relative_path)))


def _relative(uri: str, table_path: str) -> str:
    from urllib.parse import unquote

    text = unquote(uri)
    root = table_path.rstrip("/")
    index = text.find(root)
    return text[index + len(root) + 1 :] if index >= 0 else text.rsplit("/", 1)[-1]


def removed_file_footprints(spark, stream: StreamConfig, damage: list[CommitDamage]) -> dict[str, FileFootprint]:
    """What the removed files of ``late`` and ``quarantine`` held, read from their rows while the
    files still exist (VACUUM deletes them after the table's retention): event times and offset
    spans per source partition. One Spark job per table; files already gone are left out (the
    rules fall back to their stats, or to every sealed hour)."""
    from pyspark.sql import functions as F

    wanted: dict[str, set[str]] = {}
    for d in damage:
        if d.table == "events" or d.every_hour:
            continue
        wanted.setdefault(d.table, set()).update(f.path for f in d.removed)
    prints: dict[str, FileFootprint] = {}
    for table, paths in wanted.items():
        root = stream.table_path(table).rstrip("/")
        files = DeltaLogFiles(spark, root)
        existing = sorted(p for p in paths if files.exists(p))
        if not existing:
            continue
        frame = spark.read.parquet(*(f"{root}/{p}" for p in existing)).withColumn("file", F.input_file_name())
        has_time = "event_time" in frame.columns
        aggregates = [F.min("source_offset").alias("low"), F.max("source_offset").alias("high")]
        if has_time:
            aggregates += [
                F.min(F.unix_millis("event_time")).alias("t0"),
                F.max(F.unix_millis("event_time")).alias("t1"),
            ]
        rows = frame.groupBy("file", "source_partition").agg(*aggregates).collect()
        by_file: dict[str, list] = {}
        for row in rows:
            by_file.setdefault(_relative(row.file, root), []).append(row)
        for relative, file_rows in by_file.items():
            times = [(r.t0, r.t1) for r in file_rows if has_time and r.t0 is not None]
            prints[relative] = FileFootprint(
                event_time_ms=(min(t[0] for t in times), max(t[1] for t in times)) if times else None,
                offsets=tuple(
                    sorted(
                        (r.source_partition, position_value(r.low), position_value(r.high))
                        for r in file_rows
                        if r.low is not None
                    )
                ),
            )
    return prints
