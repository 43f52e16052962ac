"""An alarm: one message to a person about one stream, built from typed values (the quality
run's result, the recovery's result, the failing task's identity), never from prose.

One ``Alarm`` is rendered three ways: a subject line, an HTML body for e-mail and a JSON object
for a webhook. None carries anything from a connection (no host, login or password): receivers
get the stream, the partitions and statuses, the reasons the checks gave, and where the
reports and the task's log are.

Webhook JSON (``Alarm.to_json()``)::

    {"source": "tidemark", "kind": "quality" | "recovery_lost" | "persist_failed" | "unsealed_hour",
     "notice": "raised" | "reminder" | "resolved" (quality) | null, "stream", "title", "dag_id", "run_id", "task_id", "try_number", "log_url",
     "partitions": [{"partition", "status", "reasons": [...], "holes": [[s, e]], "lost": [[s, e]],
                     "previous_status", "since"}],
     "summary": {"html", "json"} | null, "details": {...}}

Offsets are [start, end) pairs; ``details`` holds what one kind adds (the recovered ranges, the
unsealed hours, the failure's type).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tidemark.alarm_memory import CHANGED, RAISED, REMINDER, RESOLVED, AlarmNotice
from tidemark.duration import format_duration_ms
from tidemark.event_time_text import format_event_time
from tidemark.quality_summary import QualitySummary, quality_summary_from

QUALITY, RECOVERY_LOST, PERSIST_FAILED, UNSEALED_HOUR = "quality", "recovery_lost", "persist_failed", "unsealed_hour"
TOPICS_REFRESH_FAILED = "topics_refresh_failed"
HOUR_MS = 3_600_000


@dataclass(frozen=True)
class PartitionFinding:
    partition: int
    status: str  # a quality status: STALL, STOP, HOLE or LOST here
    reasons: tuple[str, ...]
    holes: tuple[tuple[int, int], ...] = ()
    lost: tuple[tuple[int, int], ...] = ()
    previous_status: str | None = None  # the status it left (a change, or a resolved alarm)
    since_ms: int | None = None  # when the alarm began (ms, UTC)

    def to_json(self) -> dict:
        return {
            "partition": self.partition,
            "status": self.status,
            "reasons": list(self.reasons),
            "holes": [list(r) for r in self.holes],
            "lost": [list(r) for r in self.lost],
            "previous_status": self.previous_status,
            "since": None if self.since_ms is None else format_event_time(self.since_ms),
        }


@dataclass(frozen=True)
class TaskIdentity:
    """Which Airflow task instance the alarm is about (from the callback's context)."""

    dag_id: str
    run_id: str
    task_id: str
    try_number: int | None
    log_url: str | None


@dataclass(frozen=True)
class Alarm:
    kind: str
    stream: str
    title: str
    task: TaskIdentity
    partitions: tuple[PartitionFinding, ...] = ()
    summary_html: str | None = None
    summary_json: str | None = None
    details: dict = field(default_factory=dict)
    # For a quality alarm: raised, reminder or resolved (tidemark.alarm_memory); None for others.
    notice: str | None = None

    @property
    def subject(self) -> str:
        return f"[tidemark] {self.stream}: {self.title}"

    def to_json(self) -> dict:
        summary = (
            {"html": self.summary_html, "json": self.summary_json} if self.summary_html or self.summary_json else None
        )
        return {
            "source": "tidemark",
            "kind": self.kind,
            "notice": self.notice,
            "stream": self.stream,
            "title": self.title,
            "dag_id": self.task.dag_id,
            "run_id": self.task.run_id,
            "task_id": self.task.task_id,
            "try_number": self.task.try_number,
            "log_url": self.task.log_url,
            "partitions": [p.to_json() for p in self.partitions],
            "summary": summary,
            "details": dict(self.details),
        }

    def html(self) -> str:
        """The e-mail body: a heading, one row per partition, the links, the task."""
        e = html.escape
        rows = "".join(
            f"<tr><td>{p.partition}</td><td><b>{e(p.status)}</b></td><td>{'<br>'.join(e(r) for r in p.reasons)}</td>"
            f"<td>{e(_spans(p.holes))}</td><td>{e(_spans(p.lost))}</td></tr>"
            for p in self.partitions
        )
        table = (
            (
                "<table border='1' cellpadding='4'><tr><th>partition</th><th>status</th><th>reasons</th>"
                f"<th>holes</th><th>lost</th></tr>{rows}</table>"
            )
            if rows
            else ""
        )
        details = "".join(f"<li>{e(str(k))}: {e(_text(v))}</li>" for k, v in self.details.items())
        links = []
        if self.summary_html:
            links.append(
                f"<li>Quality summary: <a href='file://{e(self.summary_html)}'>file://{e(self.summary_html)}</a></li>"
            )
        if self.summary_json:
            links.append(f"<li>Quality summary (JSON): file://{e(self.summary_json)}</li>")
        if self.task.log_url:
            links.append(f"<li>Task log: <a href='{e(self.task.log_url)}'>{e(self.task.log_url)}</a></li>")
        task = f"DAG {e(self.task.dag_id)}, run {e(self.task.run_id)}, task {e(self.task.task_id)}" + (
            f", try {self.task.try_number}" if self.task.try_number is not None else ""
        )
        return (
            f"<h3>Stream {e(self.stream)}: {e(self.title)}</h3>{table}"
            + (f"<ul>{details}</ul>" if details else "")
            + (f"<ul>{''.join(links)}</ul>" if links else "")
            + f"<p>{task}</p>"
        )


def notice_alarms(
    result: QualitySummary | Mapping[str, Any], notices: list[AlarmNotice], now_ms: int, task: TaskIdentity
) -> list[Alarm]:
    """The messages a quality run's due notices (tidemark.alarm_memory.due_notices) make: one for
    the partitions that entered an alarm status or changed it, one reminder for those that stay,
    one "resolved" for those that left; each only when it has a partition. ``now_ms``: the run's
    time, for how long an alarm lasted."""
    summary = quality_summary_from(result, "the quality task's result (XCom)")
    checked = {p.partition: p for p in summary.partitions}

    def finding(notice: AlarmNotice) -> PartitionFinding:
        part = checked[notice.partition]
        alarming = notice.kind != RESOLVED
        return PartitionFinding(
            notice.partition,
            notice.status,
            part.reasons_or_reason if alarming else (),
            holes=part.holes if alarming else (),
            lost=part.lost if alarming else (),
            previous_status=notice.previous_status,
            since_ms=notice.since_ms,
        )

    def was(notice: AlarmNotice) -> str:
        return f"{notice.previous_status} for {_lasted(now_ms - notice.since_ms)}"

    groups = (
        (
            RAISED,
            [n for n in notices if n.kind in (RAISED, CHANGED)],
            lambda n: (
                f"partition {n.partition} {n.status}" + (f" (was {n.previous_status})" if n.kind == CHANGED else "")
            ),
        ),
        (
            REMINDER,
            [n for n in notices if n.kind == REMINDER],
            lambda n: f"partition {n.partition} {n.status} for {_lasted(now_ms - n.since_ms)}",
        ),
        (
            RESOLVED,
            [n for n in notices if n.kind == RESOLVED],
            lambda n: f"partition {n.partition} {n.status} (was {was(n)})",
        ),
    )
    prefix = {RAISED: "", REMINDER: "still ", RESOLVED: "resolved: "}
    alarms = []
    for notice_kind, group, phrase in groups:
        if not group:
            continue
        group.sort(key=lambda n: (-_severity(summary, n.status), n.partition))  # worst first
        alarms.append(
            Alarm(
                QUALITY,
                summary.stream,
                prefix[notice_kind] + ", ".join(phrase(n) for n in group),
                task,
                tuple(finding(n) for n in group),
                summary.paths.summary_html,
                summary.paths.summary_json,
                {
                    "hours_checked": list(summary.hours),
                    "recovery_requested": [r.partition for r in summary.recovery_requests],
                },
                notice=notice_kind,
            )
        )
    return alarms


def recovery_lost_alarm(stream: str, request: dict, result: dict, task: TaskIdentity) -> Alarm | None:
    """The alarm for a recovery (the recover job's result) that found offsets LOST; None if none."""
    lost = _pairs(result.get("lost"))
    if not lost:
        return None
    partition = int(request["partition"])
    reason = (
        f"{sum(e - s for s, e in lost)} offsets left the log (retention) before they were persisted; "
        f"{result.get('inserted', 0)} records of the recoverable ranges were inserted"
    )
    finding = PartitionFinding(partition, "LOST", (reason,), lost=lost)
    return Alarm(
        RECOVERY_LOST,
        stream,
        f"partition {partition} LOST",
        task,
        (finding,),
        details={
            "requested": [
                [r["start"], r["end"]] if isinstance(r, dict) else list(r) for r in request.get("ranges", [])
            ],
            "recovered": [
                [r["start"], r["end"]] if isinstance(r, dict) else list(r) for r in result.get("recovered", [])
            ],
            "request_reason": request.get("reason", ""),
        },
    )


def persist_failed_alarm(stream: str, error_type: str | None, task: TaskIdentity) -> Alarm:
    """The persist task failed its last try: nothing is being persisted until a run succeeds."""
    tries = f" after {task.try_number} tries" if task.try_number else ""
    return Alarm(
        PERSIST_FAILED,
        stream,
        f"the persist job failed{tries}",
        task,
        details={"error": error_type or "unknown", "what_now": "the stream is not being persisted; see the task log"},
    )


def topics_refresh_failed_alarm(family: str, error_type: str | None, task: TaskIdentity) -> Alarm:
    """A family's topic listing could not be refreshed: its members go on as listed before, and
    a topic created since is not persisted until a refresh succeeds. ``stream`` holds the family."""
    return Alarm(
        TOPICS_REFRESH_FAILED,
        family,
        "the family's topics could not be listed",
        task,
        details={
            "family": family,
            "error": error_type or "unknown",
            "what_now": "the members listed before go on; a new topic waits for a refresh that succeeds; see the task log",
        },
    )


def unsealed_hour_alarm(
    stream: str, hours_ms: list[int], newest_sealed_ms: int | None, bound_ms: int, now_ms: int, task: TaskIdentity
) -> Alarm:
    """Event-time hours that should have been sealed by now (end + ``bound_ms`` passed)."""
    first, last = hours_ms[0], hours_ms[-1]
    span = format_event_time(first) if first == last else f"{format_event_time(first)} … {format_event_time(last)}"
    return Alarm(
        UNSEALED_HOUR,
        stream,
        f"{len(hours_ms)} hour{'s' if len(hours_ms) > 1 else ''} not sealed {format_duration_ms(bound_ms)} after {'its' if len(hours_ms) == 1 else 'their'} end",
        task,
        # The first day of them is listed; a longer outage is one span.
        details={
            "unsealed_hours": [format_event_time(h) for h in hours_ms[:24]],
            "span": span,
            "newest_sealed_hour": None if newest_sealed_ms is None else format_event_time(newest_sealed_ms),
            "bound": format_duration_ms(bound_ms),
            "checked_at": format_event_time(now_ms),
        },
    )


def overdue_hours(newest_sealed_ms: int | None, bound_ms: int, now_ms: int) -> list[int]:
    """Hour starts (ms) that must be sealed at ``now_ms`` but are not: every hour H after the
    newest sealed one with H + 1h + ``bound_ms`` <= ``now_ms``. None sealed yet: none (a stream
    that never sealed is reported by the quality run's stall statuses, not here)."""
    if newest_sealed_ms is None:
        return []
    start = newest_sealed_ms - newest_sealed_ms % HOUR_MS + HOUR_MS
    due = now_ms - bound_ms - HOUR_MS  # the latest hour start whose deadline has passed
    return list(range(start, due + 1, HOUR_MS))


def _lasted(ms: int) -> str:
    """How long an alarm lasted, for a person: whole seconds (99s, not 99666ms), at least 1s."""
    return format_duration_ms(max(ms // 1000, 1) * 1000)


def _severity(summary: QualitySummary, status: str) -> int:
    order = [s.value for s in summary.status_order]
    return order.index(status) if status in order else 0


def _pairs(spans: Any) -> tuple[tuple[int, int], ...]:
    out = []
    for span in spans or []:
        if isinstance(span, dict):
            out.append((int(span["start"]), int(span["end"])))
        else:
            out.append((int(span[0]), int(span[1])))
    return tuple(out)


def _spans(spans: tuple[tuple[int, int], ...]) -> str:
    return ", ".join(f"[{s}, {e})" for s, e in spans) or "—"


def _text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(_text(v) for v in value) or "—"
    return "—" if value is None else str(value)
