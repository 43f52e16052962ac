"""Whether a family member needs a quality check at this tick, decided without Great Expectations.

A member whose tables no commit has changed since its last check, which passed, and whose log
holds nothing the lake lacks, would get the answer it got last time: every check a regular run
makes reads the lake's tables (completeness, holes, gaps, late, quarantine: new only with a new
commit) or compares the lake with the log (stall and retention: records waiting, which the
persist look sees). So a family's quality tick checks a member when any of these holds, and
says which:

- hours were asked for it (its sealed-hours events);
- it has no memory of a check yet;
- its last check did not pass (its alarms must be reminded or resolved);
- a table it reads (ledger, events, seals) is at another version than its last check read;
- its log holds records its ledger lacks, or its log or ledger could not be judged
  (tidemark.nothing_new: the persist look).

The memory of a stream's last check is one small file beside its reports
(``<report_dir>/<stream>/last_check.json``), written by the quality run that checked it
(expectations/quality_run.py, for every stream, a family's member or not).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import msgspec

from tidemark.typed_file import write_typed_file

# The tables a change of which can change a regular check's answer.
WATCHED_TABLES = ("ledger", "events", "seals")


class WorstPartition(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The partition a check found worst (highest status, then largest lag): its status, its lag
    in positions (None when unknown) and the sentence behind the status."""

    partition: int
    status: str
    lag: int | None
    reason: str


class LastCheck(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A stream's last completed quality check: the version of each watched table it read (-1: the
    table did not exist), whether it passed (every partition OK or WARN, no check failed), when
    (UTC ms), how many partitions it judged and the worst of them (None: none judged). The
    page and ``tidemark status`` list many streams from these, one line each."""

    versions: dict[str, int]
    passed: bool
    checked_at_ms: int
    partitions: int = 0
    worst: WorstPartition | None = None


def check_reason(
    last: LastCheck | None,
    versions_now: Mapping[str, int],
    log_has_news: str | None,
    hours_asked: int = 0,
) -> str | None:
    """Why the member must be checked now (one sentence), or None when its last answer stands.
    ``log_has_news``: the persist look's sentence when it found something to do (or could not
    judge), None when the log holds nothing new."""
    if hours_asked:
        return f"{hours_asked} sealed hour{'s' if hours_asked > 1 else ''} to check"
    if last is None:
        return "no check remembered yet"
    if not last.passed:
        return "its last check did not pass"
    changed = [table for table in WATCHED_TABLES if versions_now.get(table, -1) != last.versions.get(table, -1)]
    if changed:
        return f"{', '.join(changed)} changed since its last check"
    if log_has_news is not None:
        return log_has_news
    return None


def last_check_of(summary, versions: Mapping[str, int], now_ms: int) -> LastCheck:
    """The memory of a completed check whose tidemark.quality_summary.QualitySummary is
    ``summary``, having read the tables at ``versions``, at ``now_ms``."""
    from tidemark.quality_status import QualityStatus

    partitions = summary.partitions
    passed = all(p.status in (QualityStatus.OK, QualityStatus.WARN) and not p.failed_checks for p in partitions)
    worst = max(partitions, key=lambda p: (p.status.severity, p.lag or 0, -p.partition), default=None)
    return LastCheck(
        dict(versions),
        passed,
        now_ms,
        len(partitions),
        None if worst is None else WorstPartition(worst.partition, worst.status.value, worst.lag, worst.reason),
    )


def last_check_path(report_dir: str | Path, stream: str) -> Path:
    return Path(report_dir) / stream / "last_check.json"


def read_last_check(report_dir: str | Path, stream: str) -> LastCheck | None:
    """The member's memory; None when there is none or it cannot be read (then it is checked)."""
    try:
        return msgspec.json.decode(last_check_path(report_dir, stream).read_bytes(), type=LastCheck)
    except (FileNotFoundError, msgspec.DecodeError):
        return None


def remember_check(report_dir: str | Path, stream: str, last: LastCheck) -> None:
    write_typed_file(last_check_path(report_dir, stream), last, atomic=True)
