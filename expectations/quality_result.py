"""What one quality run of one stream found: per partition, per hour and partition, per check,
and the recovery requests it implies. Offsets are [start, end) pairs; times are ms since the
epoch (UTC) with an ISO-8601 twin in the JSON.

The run's summary (``QualityRunResult.summary()``) is one typed value, tidemark.quality_summary's
``QualitySummary``: summary.json, the quality task's result and its XCom are it. JSON shape::

    {"stream", "run_name", "now_ms", "now", "hours": ["2026-11-22T01:00:00Z", ...], "success",
     "status_order": ["OK", "WARN", "LAGGING", "STALL", "STOP", "HOLE", "LOST"],
     "partitions": [{"partition", "status", "records", "late", "quarantined", "position",
                     "log_earliest", "log_end", "lag", "partition_watermark_ms",
                     "partition_watermark", "holes": [[s, e]], "hole_ranges": [{...}],
                     "lost": [[s, e]], "failed_checks": [...], "reason", "reasons": [...]}],
     "hours_checked": [{"hour", "partition", "status", "records", "late", "quarantined",
                        "ranges", "data_records", "persisted", "duplicated_offsets",
                        "active_history_hours", "longest_event_time_gap_ms",
                        "failed_checks", "reasons"}],
     "checks": [{"name", "ran", "success", "rows", "failed_rules", "warned_rules",
                 "facts_seconds", "gx_seconds"}],
     "recovery_requests": [{"stream", "partition", "ranges": [{"start", "end"}], "reason",
                            "restart_live"}],  # each a RecoveryRequest's JSON: the recover DAG's conf
     "sweep": false,
     "damage": [{"table", "version", "operation", "committed_at_ms", "committed_at", "kind", "rows",
                 "hours": [...], "reason"}],
     "paths": {"summary_json", "summary_html", "data_docs_index", "hour_reports": [...]},
     "seconds", "stage_seconds": {"ledger", "completeness", ..., "reports"}}

``holes`` are offsets missing from the lake that the log still holds (recovery replays them);
``lost`` are offsets missing from the lake that the log no longer holds. They never overlap.
``damage`` lists the commits of the lake's Delta log since the previous run that removed or
rewrote rows of sealed hours (expectations.lake_damage), each with the hours it sent back to be
checked; ``sweep`` is True for the slow sweep (completeness of every hour still in the source
log's retention, no hour reports written).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import msgspec

from expectations.hour_scope import hour_text
from expectations.lake_damage import LakeDamage
from expectations.quality_status import STATUS_ORDER, QualityStatus
from tidemark.event_time_text import format_event_time, format_optional_event_time
from tidemark.offset_coverage import OffsetRange
from tidemark.quality_summary import (
    AcceptedLossSummary,
    CheckOutcome,
    HoleRange,
    HourSummary,
    PartitionSummary,
    QualitySummary,
    SummaryPaths,
    json_values,
)
from tidemark.recovery_request import RecoveryRequest


@dataclass(frozen=True)
class PartitionQuality:
    partition: int
    status: QualityStatus
    records: int  # events rows with event time in the checked hours
    late: int  # late rows with event time in the checked hours
    quarantined: int  # quarantine rows in the checked hours' ranges
    position: int | None  # the live read position (next offset to read); None before the first live row
    log_earliest: int | None
    log_end: int | None
    lag: int | None  # log_end - position, in offsets
    partition_watermark_ms: int | None  # W_p after the newest live batch
    holes: tuple[OffsetRange, ...]
    hole_ranges: tuple  # completeness.HoleRange
    lost: tuple[OffsetRange, ...]
    failed_checks: tuple[str, ...]
    reason: str  # the sentence behind the status (the worst finding's, or the reader's state when OK)
    reasons: tuple[str, ...]  # every finding's sentence
    accepted_lost: tuple = ()  # tidemark.accepted_loss.AcceptedLoss of the partition

    def summary(self) -> PartitionSummary:
        return PartitionSummary(
            partition=self.partition,
            status=self.status,
            reason=self.reason,
            records=self.records,
            late=self.late,
            quarantined=self.quarantined,
            position=self.position,
            log_earliest=self.log_earliest,
            log_end=self.log_end,
            lag=self.lag,
            partition_watermark_ms=self.partition_watermark_ms,
            partition_watermark=format_optional_event_time(self.partition_watermark_ms),
            holes=_spans(self.holes),
            hole_ranges=tuple(msgspec.convert(hole.to_json(), HoleRange) for hole in self.hole_ranges),
            lost=_spans(self.lost),
            accepted_lost=tuple(
                AcceptedLossSummary(
                    start=a.start,
                    end=a.end,
                    accepted_by=a.accepted_by,
                    accepted_at_ms=a.accepted_at_ms,
                    accepted_at=format_event_time(a.accepted_at_ms),
                )
                for a in self.accepted_lost
            ),
            failed_checks=tuple(self.failed_checks),
            reasons=tuple(self.reasons),
        )

    def to_json(self) -> dict:
        return json_values(self.summary())


@dataclass(frozen=True)
class CheckSummary:
    """One check family in this run. ``ran`` is False when it had nothing to check (the hour
    families when no hour was asked); ``success`` is False when a critical rule failed."""

    name: str
    ran: bool
    success: bool
    rows: int
    failed_rules: tuple[str, ...]
    warned_rules: tuple[str, ...]
    facts_seconds: float
    gx_seconds: float

    def summary(self) -> CheckOutcome:
        return CheckOutcome(
            name=self.name,
            ran=self.ran,
            success=self.success,
            rows=self.rows,
            failed_rules=tuple(self.failed_rules),
            warned_rules=tuple(self.warned_rules),
            facts_seconds=round(self.facts_seconds, 3),
            gx_seconds=round(self.gx_seconds, 3),
        )

    def to_json(self) -> dict:
        return json_values(self.summary())


def recovery_request_json(request: RecoveryRequest) -> dict:
    """The recover DAG's conf: the request's own JSON (``RecoveryRequest.to_json``), unchanged."""
    return request.to_json()


@dataclass(frozen=True)
class QualityRunResult:
    stream: str
    run_name: str
    now_ms: int
    hours_ms: tuple[int, ...]
    partitions: tuple[PartitionQuality, ...]
    hours: tuple[HourSummary, ...]
    checks: tuple[CheckSummary, ...]
    recovery_requests: tuple[RecoveryRequest, ...]
    summary_json: str
    summary_html: str
    data_docs_index: str | None  # None when no check ran (nothing was validated)
    hour_reports: tuple[str, ...]
    seconds: float  # wall time of the whole run
    # Wall time per stage: ledger, each family's facts, gx_start, validation, reports.
    stage_seconds: tuple[tuple[str, float], ...]
    # Commits since the previous run that removed or rewrote rows, with the sealed hours they sent back.
    damage: tuple[LakeDamage, ...] = ()
    sweep: bool = False  # the slow sweep: completeness only, over every hour within the source log's retention

    def damage_in(self, hour_ms: int) -> tuple[LakeDamage, ...]:
        """The damage that touched ``hour_ms``."""
        return tuple(d for d in self.damage if hour_ms in d.hours_ms)

    def finished(self, seconds: float, stage_seconds: tuple[tuple[str, float], ...]) -> QualityRunResult:
        return replace(self, seconds=seconds, stage_seconds=stage_seconds)

    @property
    def success(self) -> bool:
        """Every check that ran passed (warnings do not fail a run)."""
        return all(check.success for check in self.checks)

    def partition(self, partition: int) -> PartitionQuality:
        for quality in self.partitions:
            if quality.partition == partition:
                return quality
        raise KeyError(f"stream {self.stream!r}: partition {partition} was not checked")

    def hour(self, hour_ms: int, partition: int) -> HourSummary:
        for figures in self.hours:
            if figures.hour_ms == hour_ms and figures.partition == partition:
                return figures
        raise KeyError(f"stream {self.stream!r}: hour {hour_text(hour_ms)} of partition {partition} was not checked")

    def check(self, name: str) -> CheckSummary:
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(f"no check named {name!r}")

    def summary(self) -> QualitySummary:
        """The run as the one typed value summary.json, the result file and the XCom hold."""
        return QualitySummary(
            stream=self.stream,
            run_name=self.run_name,
            now_ms=self.now_ms,
            now=format_event_time(self.now_ms),
            hours=tuple(hour_text(h) for h in self.hours_ms),
            success=self.success,
            status_order=STATUS_ORDER,
            partitions=tuple(p.summary() for p in self.partitions),
            hours_checked=tuple(self.hours),
            checks=tuple(c.summary() for c in self.checks),
            recovery_requests=tuple(self.recovery_requests),
            paths=SummaryPaths(
                summary_json=self.summary_json,
                summary_html=self.summary_html,
                data_docs_index=self.data_docs_index,
                hour_reports=tuple(self.hour_reports),
            ),
            sweep=self.sweep,
            damage=tuple(d.summary() for d in self.damage),
            seconds=round(self.seconds, 3),
            stage_seconds={stage: round(seconds, 3) for stage, seconds in self.stage_seconds},
        )

    def to_json(self) -> dict:
        """The summary as plain JSON values."""
        return json_values(self.summary())


def _spans(spans) -> tuple[tuple[int, int], ...]:
    """[start, end) pairs: the shape the summary keeps holes and lost offsets in."""
    return tuple((span.start, span.end) for span in spans)
