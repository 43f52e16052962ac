"""The Delta log of a stream's persisted tables as the damage rules read it (expectations.lake_damage):
the commit files written since the versions last checked, what removed files held, and files the
tables reference that are gone.

Commit files are read straight from ``<table>/_delta_log/<20-digit version>.json`` through
pyarrow's file system of the lake (local disk or S3, connectors.lake_files), one small read per
commit: no Spark, no JVM, no snapshot. The few Parquet files whose rows a rule needs (removed files
that still exist) are read with pyarrow, the files a snapshot references listed with deltalake. Checkpoints are not read: they hold the table's state, not what a commit removed. When
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
    """The commit files of one table's ``_delta_log``, and the table's files by relative path."""

    def __init__(self, table_path: str):
        from connectors.lake_files import lake_filesystem

        self.table_path = table_path.rstrip("/")
        self.filesystem, self._root = lake_filesystem(self.table_path)
        self._log = f"{self._root}/_delta_log"

    def versions(self) -> list[int]:
        """The versions with a commit file, ascending ([] when the table has no log)."""
        from pyarrow import fs

        listed = fs.FileSelector(self._log, allow_not_found=True)
        names = (info.base_name for info in self.filesystem.get_file_info(listed))
        return sorted(int(match.group(1)) for name in names if (match := _COMMIT_FILE.match(name)))

    def read(self, version: int) -> str:
        with self.filesystem.open_input_stream(f"{self._log}/{version:020d}.json") as stream:
            return stream.read().decode("utf-8")

    def path(self, relative_path: str) -> str:
        """A file of the table as the file system names it."""
        return f"{self._root}/{relative_path}"

    def existing(self, relative_paths: list[str]) -> list[str]:
        """Those of ``relative_paths`` that exist, in the same order."""
        from pyarrow import fs

        if not relative_paths:
            return []
        found = self.filesystem.get_file_info([self.path(p) for p in relative_paths])
        return [p for p, info in zip(relative_paths, found) if info.type != fs.FileType.NotFound]

    def exists(self, relative_path: str) -> bool:
        return bool(self.existing([relative_path]))


def scan_log(stream: StreamConfig, since: Mapping[str, int] | None) -> LogScan:
    """The damage in the commits after ``since[table]`` up to each table's newest version.

    ``since`` None (no state yet): nothing is damage, the scan only records where the tables are.
    A table missing from ``since`` starts from its newest version too."""
    damage: list[CommitDamage] = []
    versions: dict[str, int] = {}
    read = 0
    for table in DAMAGE_TABLES:
        files = DeltaLogFiles(stream.table_path(table))
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
        damage.extend(log_damage(commits, file_row_counts(files, uncounted_removes(commits))))
        vacuums = [commit for commit in commits if commit.operation.upper().startswith("VACUUM")]
        if vacuums:
            damage.extend(missing_files(stream, table, "VACUUM", vacuums[-1].version))
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


def file_row_counts(files: DeltaLogFiles, paths: list[str]) -> dict[str, int]:
    """Rows of each file in ``paths`` (relative to the table) that still exists, from its Parquet
    footer: only for rewrites whose removes carry no stats."""
    import pyarrow.parquet as pq

    counts = {}
    for relative in files.existing(list(dict.fromkeys(paths))):
        with files.filesystem.open_input_file(files.path(relative)) as handle:
            counts[relative] = pq.ParquetFile(handle).metadata.num_rows
    return counts


def missing_files(
    stream: StreamConfig, table: str, operation: str = "FILES MISSING", version: int | None = None
) -> list[CommitDamage]:
    """Files the table's current snapshot references that are gone (a VACUUM with too short a
    retention that raced a writer, or files deleted by hand): one damage naming them, or []."""
    import pyarrow as pa

    from connectors.lake_storage import open_delta_table

    path = stream.table_path(table)
    files = DeltaLogFiles(path)
    referenced = pa.table(open_delta_table(path).get_add_actions(flatten=False)).column("path").to_pylist()
    present = set(files.existing(referenced))
    gone = [
        RemovedFile(relative, partition_values_of(relative), True, None, None)
        for relative in referenced
        if relative not in present
    ]
    if not gone:
        return []
    return [CommitDamage(table, version, operation, None, DamageKind.FILES_MISSING, None, tuple(gone))]


def partition_values_of(relative_path: str) -> tuple[tuple[str, str], ...]:
    """'event_date=2026-11-22/event_hour=1/part-0.parquet' → (('event_date', '2026-11-22'), ('event_hour', '1'))."""
    return tuple(sorted((m.group(1), m.group(2)) for m in _PARTITION_DIR.finditer(relative_path)))


def removed_file_footprints(stream: StreamConfig, damage: list[CommitDamage]) -> dict[str, FileFootprint]:
    """What the removed files of ``late`` and ``quarantine`` held, read from their rows while the
    files still exist (VACUUM deletes them after the table's retention): event times and offset
    spans per source partition, read with pyarrow; files already gone are left out (the rules fall
    back to their stats, or to every sealed hour)."""
    wanted: dict[str, set[str]] = {}
    for d in damage:
        if d.table == "events" or d.every_hour:
            continue
        wanted.setdefault(d.table, set()).update(f.path for f in d.removed)
    prints: dict[str, FileFootprint] = {}
    for table, paths in wanted.items():
        files = DeltaLogFiles(stream.table_path(table))
        for relative in files.existing(sorted(paths)):
            prints[relative] = _footprint(files, relative)
    return prints


def _footprint(files: DeltaLogFiles, relative: str) -> FileFootprint:
    """Event times and, per source partition, the lowest and highest position one file holds."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    with files.filesystem.open_input_file(files.path(relative)) as handle:
        parquet = pq.ParquetFile(handle)
        has_time = "event_time" in parquet.schema_arrow.names
        rows = parquet.read(columns=["source_partition", "source_offset", *(["event_time"] if has_time else [])])
    offsets = rows.filter(pc.is_valid(rows.column("source_offset")))
    spans = offsets.group_by("source_partition").aggregate([("source_offset", "min"), ("source_offset", "max")])
    times = pc.min_max(rows.column("event_time")) if has_time else None
    return FileFootprint(
        event_time_ms=(
            (_millis(times["min"]), _millis(times["max"])) if times is not None and times["min"].is_valid else None
        ),
        offsets=tuple(
            sorted(
                (partition, position_value(low), position_value(high))
                for partition, low, high in zip(
                    spans.column("source_partition").to_pylist(),
                    spans.column("source_offset_min").to_pylist(),
                    spans.column("source_offset_max").to_pylist(),
                )
            )
        ),
    )


def _millis(scalar) -> int:
    """A timestamp scalar as ms since the epoch (floored, as Spark's unix_millis)."""
    import pyarrow as pa

    return scalar.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()).as_py() // 1000
