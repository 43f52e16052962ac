"""Which checked hours a quality run looks at again: those the lake's Delta log shows damaged since
the previous run (expectations.lake_damage over expectations.delta_log, remembered in
expectations.checked_versions), and, for the slow sweep, every sealed hour the source log still
retains.

The regular run reads only the commits written since the versions it remembered, so its cost is
the commits of one interval (a few small JSON files), not the table. The sweep is the net under
it: damage the log cannot show (files deleted by hand, a log cleaned up, a bug in these rules)
is still found while recovery can repair it, because it checks completeness of every hour whose
records the source log still holds (stream.retention back from now).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from expectations.checked_versions import (
    CheckedVersions,
    CheckedVersionsUnreadable,
    read_checked_versions,
    write_checked_versions,
)
from expectations.delta_log import missing_files, removed_file_footprints, scan_log
from expectations.lake_damage import DAMAGE_TABLES, LakeDamage, log_gone, touched_hours
from expectations.lake_facts import LakeFacts
from expectations.ledger_entries import HOUR_MS
from tidemark.stream_config import StreamConfig

log = logging.getLogger("tidemark.quality")


@dataclass(frozen=True)
class DamageFound:
    """The damage since the remembered versions, and the versions to remember once the run
    completed (None: nothing to remember, e.g. a sweep)."""

    damage: tuple[LakeDamage, ...]
    versions: dict[str, int] | None = field(default=None)
    commits_read: int = 0


def find_damage(lake: LakeFacts, stream: StreamConfig, report_dir: str | Path, sealed_hours) -> DamageFound:
    """Damage in ``events``, ``late`` and ``quarantine`` since the versions remembered under
    ``report_dir``, resolved to the ``sealed_hours`` (ms) it touched (``lake``'s ledger says
    which offsets an hour's ranges hold). Reads the Delta log's JSON, no Spark."""
    unreadable = False
    try:
        state = read_checked_versions(report_dir, stream.name)
    except CheckedVersionsUnreadable as error:
        log.warning({"event": "quality_checked_versions_unreadable", "stream": stream.name, "error": str(error)})
        state, unreadable = None, True
    scan = scan_log(stream, None if state is None else state.versions)
    # Unreadable memory: nothing is known about what the checks saw, so every sealed hour again.
    raw = (
        [log_gone(table, "CHECKED VERSIONS UNREADABLE") for table in DAMAGE_TABLES] if unreadable else list(scan.damage)
    )
    entries = lake.ledger() if raw else []
    prints = removed_file_footprints(stream, raw) if raw else {}
    damage = tuple(d for d in (touched_hours(r, sealed_hours, entries, prints) for r in raw) if d.hours_ms)
    for d in damage:
        log.info({"event": "quality_lake_damage", "stream": stream.name, **d.to_json()})
    return DamageFound(damage, scan.versions, scan.commits_read)


def remember_checked(report_dir: str | Path, stream: str, found: DamageFound, run_name: str, now_ms: int) -> None:
    """After a completed run: the next run reads the log from these versions on."""
    if found.versions is not None:
        write_checked_versions(report_dir, CheckedVersions(stream, dict(found.versions), run_name, now_ms))


def sweep_hours(sealed_hours, now_ms: int, retention_ms: int) -> list[int]:
    """The sealed hours whose records the source log may still hold: those ending after
    now − retention (an older hour's holes could only be reported lost, never repaired)."""
    return sorted(h for h in set(sealed_hours) if h + HOUR_MS > now_ms - retention_ms)


def sweep_damage(lake: LakeFacts, stream: StreamConfig, hours) -> tuple[LakeDamage, ...]:
    """Files the three tables reference that are gone, resolved to ``hours``: what no commit shows."""
    raw = [d for table in DAMAGE_TABLES for d in missing_files(stream, table)]
    if not raw:
        return ()
    entries = lake.ledger()
    return tuple(d for d in (touched_hours(r, hours, entries) for r in raw) if d.hours_ms)
