"""Damage done to the lake after its hours were checked, read from the Delta log: which commits of
``events``, ``late`` and ``quarantine`` removed or rewrote rows, and which sealed hours they touched.

A check that passed says what the lake held when it ran. Users change lakes afterwards (a wrong
DELETE, an UPDATE, a MERGE that deletes, a RESTORE to an older version, an overwrite or a
replaceWhere, a compaction job that drops rows), and every such change is a commit in the table's
Delta log. This module reads the commits' actions (pure: the texts come from an adapter) and says:

- a commit that removes files with ``dataChange: true`` removed or rewrote rows: **damage**,
  whatever its operation (DELETE, UPDATE, MERGE, RESTORE, WRITE in Overwrite mode, TRUNCATE, ...);
  appends and insert-only MERGEs (the persist, recovery and backfill writers) remove nothing;
- a commit that removes files with ``dataChange: false`` (OPTIMIZE, or an overwrite with
  ``dataChange=false``) claims to rewrite rows without changing them: it is damage only when the
  log shows fewer rows added than removed in a partition (**rows dropped**); equal counts are a
  plain compaction and raise nothing, not even a re-check; counts the log does not hold (a remove
  without stats whose add is older than the commits read) make it an **uncounted rewrite**:
  its hours are re-checked, and the check, not the log, gives the verdict;
- versions the log no longer holds (log cleanup passed the version last checked, or the table was
  replaced) are **log gone**: every sealed hour is re-checked;
- a commit whose user metadata is ``erasure:<id>`` is ``tidemark erase`` removing a person's
  records: an **erasure**, named as one; its hours are re-checked, where the erasures table
  counts the removed records as erased, so a correct erasure raises nothing.

Which hours: ``events`` is partitioned by (event_date, event_hour), so a removed file's partition
values name its hour. ``late`` and ``quarantine`` are not: a removed file's *footprint* (its event
times, or its (partition, offset) spans) comes from its rows while the file still exists, else from
its statistics; an offset span maps to hours through the ledger ranges that carried it. A file with
no footprint at all touches every sealed hour. Only sealed hours are returned: an unsealed hour is
checked when it seals.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from enum import Enum
from urllib.parse import unquote

import msgspec

from expectations.hour_scope import hour_text
from expectations.ledger_entries import HOUR_MS, LedgerEntry
from tidemark.event_time_text import format_event_time
from tidemark.log_position import POSITION_KEY_DIGITS
from tidemark.quality_summary import LakeDamageSummary

DAMAGE_TABLES = ("events", "late", "quarantine")

# Rows a commit removed or rewrote, by the names Delta gives them in operationMetrics.
_ROW_METRICS = ("numDeletedRows", "numUpdatedRows", "numTargetRowsDeleted", "numTargetRowsUpdated")


class DamageKind(str, Enum):
    ROWS_REMOVED = "rows_removed"  # files removed with dataChange: rows deleted or rewritten
    ROWS_DROPPED = "rows_dropped"  # a rewrite (dataChange: false) that holds fewer rows afterwards
    UNCOUNTED_REWRITE = "uncounted_rewrite"  # a rewrite whose row counts the log does not hold
    FILES_MISSING = "files_missing"  # files the table still references are gone (VACUUM, or by hand)
    LOG_GONE = "log_gone"  # the versions since the last check are no longer in the log
    ERASURE = "erasure"  # tidemark erase removed a person's records (its commits say so): no damage

    def words(self, rows: int | None) -> str:
        """What the commit did, for a person: 'removed or rewrote 3 rows'."""
        counted = "rows" if rows is None else f"{rows} rows"
        return {
            DamageKind.ROWS_REMOVED: f"removed or rewrote {counted}",
            DamageKind.ROWS_DROPPED: f"rewrote files and dropped {counted}",
            DamageKind.UNCOUNTED_REWRITE: "rewrote files whose row counts the log does not hold",
            DamageKind.FILES_MISSING: "left files the table references missing",
            DamageKind.LOG_GONE: "hides what changed: the log no longer tells",
            DamageKind.ERASURE: f"erased {counted} (tidemark erase: recorded in the erasures table, not damage)",
        }[self]


@dataclass(frozen=True)
class FileFootprint:
    """What rows a removed file held, as far as known: the span of their event times (ms, both
    ends inclusive) and, per source partition, the span of their offsets (both ends inclusive)."""

    event_time_ms: tuple[int, int] | None = None
    offsets: tuple[tuple[int, int, int], ...] | None = None  # (partition, lowest, highest)


@dataclass(frozen=True)
class RemovedFile:
    path: str  # relative to the table's root, decoded
    partition_values: tuple[tuple[str, str | None], ...]
    data_change: bool
    records: int | None  # numRecords of its stats, when the remove carries them
    footprint: FileFootprint | None  # from its stats, when they hold min and max values


@dataclass(frozen=True)
class AddedFile:
    path: str
    partition_values: tuple[tuple[str, str | None], ...]
    data_change: bool
    records: int | None
    footprint: FileFootprint | None


@dataclass(frozen=True)
class DeltaCommit:
    """One version of one table's Delta log, the actions the damage rules read."""

    table: str
    version: int
    operation: str  # commitInfo.operation; "UNKNOWN" when the commit has no commitInfo
    committed_at_ms: int | None
    metrics: Mapping[str, str] = field(default_factory=dict)
    added: tuple[AddedFile, ...] = ()
    removed: tuple[RemovedFile, ...] = ()
    user_metadata: str | None = None  # commitInfo.userMetadata: the writer, or erasure:<id>


@dataclass(frozen=True)
class CommitDamage:
    """A commit (or a state of the log) that may have taken rows from sealed hours, before its
    hours are known. ``removed`` are the files it took away (empty for LOG_GONE: every hour)."""

    table: str
    version: int | None
    operation: str
    committed_at_ms: int | None
    kind: DamageKind
    rows: int | None  # rows removed or rewritten, where the log counts them
    removed: tuple[RemovedFile, ...] = ()
    every_hour: bool = False


@dataclass(frozen=True)
class LakeDamage:
    """Damage with the sealed hours it touched: those hours are checked again, and the report
    names the operation. Times are ms since the epoch, UTC."""

    table: str
    version: int | None
    operation: str
    committed_at_ms: int | None
    kind: DamageKind
    rows: int | None
    hours_ms: tuple[int, ...]

    def sentence(self) -> str:
        """e.g. 'DELETE (events version 12, 2026-11-25T23:10:01.000Z) removed or rewrote 3 rows'."""
        where = f"{self.table}" + (f" version {self.version}" if self.version is not None else "")
        when = f", {format_event_time(self.committed_at_ms)}" if self.committed_at_ms is not None else ""
        return f"{self.operation} ({where}{when}) {self.kind.words(self.rows)}"

    def summary(self) -> LakeDamageSummary:
        """The damage as the quality summary and the hour reports hold it."""
        return msgspec.convert(self.to_json(), LakeDamageSummary)

    def to_json(self) -> dict:
        return {
            "table": self.table,
            "version": self.version,
            "operation": self.operation,
            "committed_at_ms": self.committed_at_ms,
            "committed_at": None if self.committed_at_ms is None else format_event_time(self.committed_at_ms),
            "kind": self.kind.value,
            "rows": self.rows,
            "hours": [hour_text(h) for h in self.hours_ms],
            "reason": self.sentence(),
        }


# --- reading the log -------------------------------------------------------------------------------


def parse_commit(table: str, version: int, text: str) -> DeltaCommit:
    """The actions of one commit file (``_delta_log/<version>.json``: one JSON action a line)."""
    operation, committed_at, metrics, user_metadata = "UNKNOWN", None, {}, None
    added: list[AddedFile] = []
    removed: list[RemovedFile] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        action = json.loads(line)
        if "commitInfo" in action:
            info = action["commitInfo"]
            operation = str(info.get("operation") or "UNKNOWN")
            committed_at = info.get("timestamp")
            metrics = {str(k): str(v) for k, v in (info.get("operationMetrics") or {}).items()}
            user_metadata = info.get("userMetadata")
        elif "add" in action:
            added.append(AddedFile(*_file_fields(action["add"])))
        elif "remove" in action:
            removed.append(RemovedFile(*_file_fields(action["remove"])))
    return DeltaCommit(table, version, operation, committed_at, metrics, tuple(added), tuple(removed), user_metadata)


def _file_fields(action: dict) -> tuple:
    stats = _stats(action.get("stats"))
    values = tuple(sorted((action.get("partitionValues") or {}).items()))
    records = stats.get("numRecords") if stats else None
    return (
        unquote(action["path"]),
        values,
        bool(action.get("dataChange", True)),
        int(records) if records is not None else None,
        footprint_from_stats(stats) if stats else None,
    )


def _stats(text) -> dict | None:
    if not text:
        return None
    try:
        stats = json.loads(text)
    except ValueError:
        return None
    return stats if isinstance(stats, dict) else None


def footprint_from_stats(stats: Mapping) -> FileFootprint | None:
    """The footprint a file's min/max statistics allow: event times, and offsets per partition in
    the partition span (a file's stats are over all its rows, so every partition in between)."""
    low, high = stats.get("minValues") or {}, stats.get("maxValues") or {}
    event_time = None
    if low.get("event_time") is not None and high.get("event_time") is not None:
        # Delta truncates timestamp statistics to milliseconds: the true maximum is below max + 1 ms.
        event_time = (_stats_time_ms(low["event_time"]), _stats_time_ms(high["event_time"]) + 1)
    offsets = None
    keys = ("source_partition", "source_offset")
    first, last = _stats_position(low.get("source_offset")), _stats_position(high.get("source_offset"))
    if all(low.get(k) is not None and high.get(k) is not None for k in keys) and None not in (first, last):
        offsets = tuple(
            (partition, first, last)
            for partition in range(int(low["source_partition"]), int(high["source_partition"]) + 1)
        )
    if event_time is None and offsets is None:
        return None
    return FileFootprint(event_time, offsets)


def _stats_position(value) -> int | None:
    """A position from a file's statistics: a Kafka offset (a number), or a Kinesis sequence
    number's whole key. Delta keeps only a prefix of a long string (32 characters, a marker
    appended to a maximum): such a bound says nothing exact, so None (the event times decide)."""
    if value is None:
        return None
    if not isinstance(value, str):
        return int(value)
    return int(value) if len(value) == POSITION_KEY_DIGITS and value.isdigit() else None


def _stats_time_ms(text: str) -> int:
    parsed = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1000)


# --- which commits are damage ----------------------------------------------------------------------


def commit_damage(commit: DeltaCommit, known_records: Mapping[str, int] | None = None) -> list[CommitDamage]:
    """What ``commit`` did to rows already in the table (nothing: []).

    ``known_records``: numRecords of files added by earlier commits (path → rows), for removes
    that carry no stats (Delta writes none on a DELETE's or an overwrite's removes)."""
    known = known_records or {}
    found: list[CommitDamage] = []
    changed = tuple(f for f in commit.removed if f.data_change)
    if changed:
        # An erasure's DELETE (spark_jobs/erasure/job.py) is named as one: its hours are checked
        # again, where the erasures table accounts for every row it removed.
        erasure = str(commit.user_metadata or "").startswith("erasure:")
        kind = DamageKind.ERASURE if erasure else DamageKind.ROWS_REMOVED
        found.append(_damage(commit, kind, _metric_rows(commit.metrics), changed))
    rewritten = [f for f in commit.removed if not f.data_change]
    if rewritten:
        dropped, uncounted, lost_rows = [], [], 0
        for values, files in _by_partition(rewritten).items():
            before = [f.records if f.records is not None else known.get(f.path) for f in files]
            after = [f.records for f in commit.added if not f.data_change and f.partition_values == values]
            if any(n is None for n in before) or any(n is None for n in after):
                uncounted.extend(files)
            elif sum(after) < sum(before):
                dropped.extend(files)
                lost_rows += sum(before) - sum(after)
        if dropped:
            found.append(_damage(commit, DamageKind.ROWS_DROPPED, lost_rows, tuple(dropped)))
        if uncounted:
            found.append(_damage(commit, DamageKind.UNCOUNTED_REWRITE, None, tuple(uncounted)))
    return found


def log_damage(commits: Sequence[DeltaCommit], known_records: Mapping[str, int] | None = None) -> list[CommitDamage]:
    """Every commit's damage, in version order; files added by earlier commits of ``commits``
    lend their row counts and footprints to later removes that carry no stats."""
    known = dict(known_records or {})
    prints: dict[str, FileFootprint] = {}
    found = []
    for commit in sorted(commits, key=lambda c: c.version):
        for damage in commit_damage(commit, known):
            removed = tuple(
                f if f.footprint is not None or f.path not in prints else replace(f, footprint=prints[f.path])
                for f in damage.removed
            )
            found.append(replace(damage, removed=removed))
        known.update({f.path: f.records for f in commit.added if f.records is not None})
        prints.update({f.path: f.footprint for f in commit.added if f.footprint is not None})
    return found


def uncounted_removes(commits: Sequence[DeltaCommit]) -> list[str]:
    """Paths of files removed by a rewrite (dataChange: false) whose row count neither the remove
    nor an add among ``commits`` holds: the adapter counts their rows while the files exist."""
    added = {f.path for commit in commits for f in commit.added if f.records is not None}
    return sorted(
        {
            f.path
            for commit in commits
            for f in commit.removed
            if not f.data_change and f.records is None and f.path not in added
        }
    )


def log_gone(table: str, reason: str) -> CommitDamage:
    """The versions since the last check cannot be read (``reason`` says why): every hour."""
    return CommitDamage(table, None, reason, None, DamageKind.LOG_GONE, None, (), every_hour=True)


def _damage(commit: DeltaCommit, kind: DamageKind, rows: int | None, files: tuple[RemovedFile, ...]) -> CommitDamage:
    return CommitDamage(commit.table, commit.version, commit.operation, commit.committed_at_ms, kind, rows, files)


def _metric_rows(metrics: Mapping[str, str]) -> int | None:
    present = [int(metrics[name]) for name in _ROW_METRICS if str(metrics.get(name, "")).isdigit()]
    return sum(present) if present else None


def _by_partition(files: Iterable[RemovedFile]) -> dict[tuple, list[RemovedFile]]:
    grouped: dict[tuple, list[RemovedFile]] = {}
    for f in files:
        grouped.setdefault(f.partition_values, []).append(f)
    return grouped


# --- which hours ------------------------------------------------------------------------------------


def partition_hour(values: Mapping[str, str | None]) -> int | None:
    """The events partition (event_date '2026-11-22', event_hour '1') → its hour's start in ms;
    None when the values do not name an hour."""
    day, hour = values.get("event_date"), values.get("event_hour")
    if day is None or hour is None:
        return None
    try:
        start = datetime.combine(date.fromisoformat(day), datetime.min.time(), UTC)
        return int(start.timestamp() * 1000) + int(hour) * HOUR_MS
    except ValueError:
        return None


def touched_hours(
    damage: CommitDamage,
    sealed_hours: Iterable[int],
    entries: Sequence[LedgerEntry],
    footprints: Mapping[str, FileFootprint] | None = None,
) -> LakeDamage:
    """``damage`` with the sealed hours it touched. ``footprints``: what the removed files held
    (path → footprint, read from their rows while they exist), ahead of their stats."""
    sealed = sorted(set(sealed_hours))
    if damage.every_hour:
        hours = set(sealed)
    else:
        hours = set()
        for removed in damage.removed:
            hours |= _file_hours(removed, sealed, entries, (footprints or {}).get(removed.path))
    return LakeDamage(
        damage.table,
        damage.version,
        damage.operation,
        damage.committed_at_ms,
        damage.kind,
        damage.rows,
        tuple(sorted(hours)),
    )


def _file_hours(
    removed: RemovedFile, sealed: list[int], entries: Sequence[LedgerEntry], read: FileFootprint | None
) -> set[int]:
    hour = partition_hour(dict(removed.partition_values))
    if hour is not None:
        return {hour} & set(sealed)
    footprint = read or removed.footprint
    if footprint is None:
        return set(sealed)
    if footprint.event_time_ms is not None:
        low, high = footprint.event_time_ms
        return {h for h in sealed if h <= high and h + HOUR_MS > low}
    hours = set()
    for partition, low, high in footprint.offsets or ():
        for entry in entries:
            if entry.partition == partition and entry.start <= high and entry.end > low and entry.data_records > 0:
                hours |= {h for h in sealed if entry.carries_hour(h)}
    return hours


def hours_of(damage: Iterable[LakeDamage]) -> list[int]:
    return sorted({hour for d in damage for hour in d.hours_ms})
