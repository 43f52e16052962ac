"""Which version of each persisted table the quality checks last looked at: the memory that lets
a run read only the Delta log written since (expectations.lake_damage).

One small JSON file per stream, next to the hour reports: ``<report_dir>/<stream>/checked_versions.json``
(``{"stream", "versions": {"events": 41, "late": 12, "quarantine": 3}, "run_name", "checked_at_ms"}``).
It is written atomically (a temporary file, then a rename) and only after a run completed, so a
run that failed half-way reads the same commits again next time: damage is never skipped, at
worst re-checked twice. A stream without the file starts from the tables' current versions: its
hours without a report are checked anyway. A file that cannot be read is not trusted (the caller
re-checks every sealed hour) and is rewritten by the next completed run.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec


class CheckedVersions(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``versions``: table name → the newest Delta version whose commits a completed run read."""

    stream: str
    versions: dict[str, int]
    run_name: str
    checked_at_ms: int  # ms since the epoch, UTC


class CheckedVersionsUnreadable(ValueError):
    """The state file exists but is not one this module wrote (hand-edited, truncated)."""


def checked_versions_path(report_dir: str | Path, stream: str) -> Path:
    return Path(report_dir) / stream / "checked_versions.json"


def read_checked_versions(report_dir: str | Path, stream: str) -> CheckedVersions | None:
    """The stream's state, None when no run has written one; CheckedVersionsUnreadable naming
    the file when it cannot be decoded or belongs to another stream."""
    path = checked_versions_path(report_dir, stream)
    if not path.exists():
        return None
    try:
        state = msgspec.json.decode(path.read_bytes(), type=CheckedVersions)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise CheckedVersionsUnreadable(
            f"{path}: {error}; every sealed hour is checked again and the file rewritten"
        ) from None
    if state.stream != stream:
        raise CheckedVersionsUnreadable(f"{path}: written for stream {state.stream!r}, not {stream!r}")
    return state


def write_checked_versions(report_dir: str | Path, state: CheckedVersions) -> Path:
    """Write atomically: a crash leaves the old file or the new one, never half of one."""
    path = checked_versions_path(report_dir, state.stream)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".json.partial")
    partial.write_bytes(msgspec.json.format(msgspec.json.encode(state), indent=2) + b"\n")
    os.replace(partial, path)
    return path
