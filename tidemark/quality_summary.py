"""What one quality run of one stream found, as one typed value: summary.json on disk, the
quality task's result (its XCom) and the file the quality run hands its operator are this value,
written by ``encode_quality_summary`` and read back by ``read_quality_summary`` /
``quality_summary_from`` -- by the quality run that writes it, the watermark page, the alarms, the
CLI and the demo alike. Nobody reads it by string keys.

Units: offsets are [start, end) pairs (end exclusive); ``*_ms`` are milliseconds since the epoch,
UTC, each with an ISO-8601 twin (``now``, ``partition_watermark``, ``hour``, ``committed_at``);
``seconds`` are wall-clock seconds. ``hours`` are the hour starts the run checked ([H, H+1h)).

``holes`` are offsets missing from the lake that the log still holds (recovery replays them);
``lost`` are offsets missing from the lake that the log no longer holds. They never overlap.
``accepted_lost`` are lost ranges a person accepted as lost (``tidemark accept-lost``), with who
and when: no longer a failure, still shown.
``damage`` lists the commits of the lake's Delta log since the previous run that removed or
rewrote rows of sealed hours, each with the hours it sent back to be checked; ``sweep`` is True
for the slow sweep (completeness of every hour the source log still retains).

Compatibility: fields added after the first summaries were written have defaults, and fields this
type does not know are ignored, so older and newer files both read. A file that cannot be read
(not JSON, a field of the wrong type) raises ``QualitySummaryError`` naming the file and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from tidemark.quality_status import STATUS_ORDER, QualityStatus
from tidemark.recovery_request import RecoveryRequest
from tidemark.typed_file import encode_indented, write_typed_file

OffsetSpan = tuple[int, int]  # [start, end): start inclusive, end exclusive


class _Part(msgspec.Struct, frozen=True):
    """A part of the summary: immutable (each part is built by keyword)."""


class HoleRange(_Part, kw_only=True):
    """A ledger range with fewer persisted rows than data records, and the offsets no row holds."""

    start: int
    end: int
    mode: str  # live, backfill or recovery
    step_id: int | None = None  # the ledger row's aligned step; None in summaries written before it had the name
    data_records: int
    persisted: int
    missing: tuple[OffsetSpan, ...] = ()


class AcceptedLossSummary(_Part, kw_only=True):
    """Positions [start, end) lost to retention that a person accepted as lost
    (tidemark.accepted_loss): who, and when (ms, UTC, with its ISO-8601 twin)."""

    start: int
    end: int
    accepted_by: str
    accepted_at_ms: int
    accepted_at: str


class PartitionSummary(_Part, kw_only=True):
    """One source partition over the run: its status (the worst any check gave) and why."""

    partition: int
    status: QualityStatus
    reason: str  # the sentence behind the status (the worst finding's, or the reader's state when OK)
    records: int = 0  # events rows with event time in the checked hours
    late: int = 0
    quarantined: int = 0
    position: int | None = None  # the live read position (next offset to read); None before the first live row
    log_earliest: int | None = None
    log_end: int | None = None
    lag: int | None = None  # log_end - position, in offsets
    partition_watermark_ms: int | None = None  # W_p after the newest live batch
    partition_watermark: str | None = None
    holes: tuple[OffsetSpan, ...] = ()
    hole_ranges: tuple[HoleRange, ...] = ()
    lost: tuple[OffsetSpan, ...] = ()
    # Lost ranges accepted as lost: they no longer fail the checks, and are shown, never forgotten.
    accepted_lost: tuple[AcceptedLossSummary, ...] = ()
    failed_checks: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()  # every finding's sentence

    @property
    def reasons_or_reason(self) -> tuple[str, ...]:
        """Every finding's sentence; the status's own when the run listed none."""
        return self.reasons or (self.reason,)


class HourSummary(_Part, kw_only=True):
    """The figures of one checked hour and partition."""

    hour: str  # ISO-8601 hour start, UTC
    hour_ms: int
    partition: int
    status: QualityStatus
    records: int
    late: int
    quarantined: int
    ranges: int  # ledger ranges that carried records of the hour
    data_records: int  # their data records, summed
    persisted: int  # their persisted distinct offsets, summed
    duplicated_offsets: int
    active_history_hours: int
    longest_event_time_gap_ms: int | None = None
    failed_checks: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()


class CheckOutcome(_Part, kw_only=True):
    """One check family in the run. ``ran`` is False when it had nothing to check; ``success``
    is False when a critical rule failed (warnings do not fail it)."""

    name: str
    ran: bool
    success: bool
    rows: int = 0
    failed_rules: tuple[str, ...] = ()
    warned_rules: tuple[str, ...] = ()
    facts_seconds: float = 0.0
    gx_seconds: float = 0.0


class LakeDamageSummary(_Part, kw_only=True):
    """A commit of the lake's Delta log that removed or rewrote rows, and the hours it sent back."""

    table: str
    version: int | None
    operation: str
    kind: str  # expectations.lake_damage.DamageKind's value
    committed_at_ms: int | None = None
    committed_at: str | None = None
    rows: int | None = None
    hours: tuple[str, ...] = ()
    reason: str = ""


class SummaryPaths(_Part, kw_only=True):
    """Where the run's reports are (absolute paths on the machine that ran it)."""

    summary_json: str
    summary_html: str
    data_docs_index: str | None = None  # None when no check ran (nothing was validated)
    hour_reports: tuple[str, ...] = ()


class QualitySummary(_Part, kw_only=True):
    """One quality run of ``stream``: per partition, per hour and partition, per check, and the
    recovery requests the run made."""

    stream: str
    run_name: str
    now_ms: int  # when the run checked
    now: str
    hours: tuple[str, ...]  # hour starts checked, ISO-8601 UTC
    success: bool  # every check that ran passed
    status_order: tuple[QualityStatus, ...] = STATUS_ORDER
    partitions: tuple[PartitionSummary, ...] = ()
    hours_checked: tuple[HourSummary, ...] = ()
    checks: tuple[CheckOutcome, ...] = ()
    recovery_requests: tuple[RecoveryRequest, ...] = ()
    paths: SummaryPaths
    sweep: bool = False
    damage: tuple[LakeDamageSummary, ...] = ()
    seconds: float = 0.0
    stage_seconds: dict[str, float] = {}

    @property
    def failed_checks(self) -> tuple[str, ...]:
        """The checks that ran and failed, in the run's order."""
        return tuple(check.name for check in self.checks if check.ran and not check.success)

    @property
    def verdict(self) -> str:
        """'all checks passed' or 'checks failed: completeness, stall'."""
        return "all checks passed" if self.success else "checks failed: " + ", ".join(self.failed_checks)


class QualitySummaryError(ValueError):
    """A quality summary could not be read; the message names where it came from and why."""


def encode_quality_summary(summary: QualitySummary) -> bytes:
    """The summary as indented JSON (a person opens summary.json too), ending in a newline."""
    return encode_indented(summary)


def write_quality_summary(path: str | Path, summary: QualitySummary) -> None:
    """Write ``summary`` to ``path``, creating its folder."""
    write_typed_file(path, summary)


def read_quality_summary(path: str | Path) -> QualitySummary:
    """The summary in ``path``; QualitySummaryError naming the file when it is missing or not one."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise QualitySummaryError(f"{path}: cannot read the quality summary ({error.strerror or error})") from None
    try:
        return msgspec.json.decode(data, type=QualitySummary)
    except msgspec.DecodeError as error:
        raise QualitySummaryError(_unreadable(str(path), error)) from None


def quality_summary_from(document: Any, source: str) -> QualitySummary:
    """The summary in ``document`` (decoded JSON, e.g. the quality task's XCom), or the value if
    it already is one; QualitySummaryError naming ``source`` when it is not one."""
    if isinstance(document, QualitySummary):
        return document
    try:
        return msgspec.convert(document, QualitySummary)
    except (msgspec.ValidationError, TypeError, ValueError) as error:
        raise QualitySummaryError(_unreadable(source, error)) from None


def quality_summary_builtins(summary: QualitySummary) -> dict:
    """The summary as plain JSON values (dicts, lists, strings, numbers): what an XCom holds."""
    return json_values(summary)


def json_values(part: msgspec.Struct) -> Any:
    """A summary or one of its parts as the JSON it is written as, decoded to plain values: lists,
    never tuples (msgspec.to_builtins keeps tuples, which compare unequal to the lists JSON gives)."""
    return msgspec.json.decode(msgspec.json.encode(part))


def _unreadable(source: str, error: Exception) -> str:
    return (
        f"{source} is not a quality summary tidemark can read ({error}); "
        "open the summary.html beside it, or run the quality DAG again to write a new one"
    )
