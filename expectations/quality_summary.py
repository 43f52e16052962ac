"""The per-run summary a person reads at a glance: summary.json and summary.html.

Both land in ``<report_dir>/<stream>/runs/<run_name>/``. summary.json is the run's one typed
value (tidemark.quality_summary.QualitySummary), written and read by that type. The HTML page is one file: inline CSS,
no scripts, no external assets, every value HTML-escaped. It shows one row per partition
(status coloured), the hours checked, each check's outcome, the recovery requests, the figures
per hour and partition, and a link to the Data Docs index.
"""

from __future__ import annotations

import os
from html import escape
from pathlib import Path

from expectations.hour_scope import hour_text
from expectations.offset_spans import spans_text
from expectations.quality_result import QualityRunResult
from expectations.quality_status import STATUS_ORDER, QualityStatus
from tidemark.duration import format_duration_ms
from tidemark.event_time_text import format_event_time, format_optional_event_time
from tidemark.quality_summary import write_quality_summary

_STATUS_COLOURS = {
    QualityStatus.OK: ("#1b5e20", "#e8f5e9"),
    QualityStatus.WARN: ("#7a5200", "#fff4d6"),
    QualityStatus.LAGGING: ("#8a3c00", "#ffe6d1"),
    QualityStatus.STALL: ("#8e1b1b", "#fde0dc"),
    QualityStatus.STOP: ("#ffffff", "#c62828"),
    QualityStatus.HOLE: ("#ffffff", "#ad1457"),
    QualityStatus.LOST: ("#ffffff", "#311b92"),
}

_STYLE = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 1.5rem; color: #1d1d1f; }
h1 { font-size: 1.4rem; margin-bottom: 0.2rem; } h2 { font-size: 1.1rem; margin-top: 1.6rem; }
.meta { color: #555; margin: 0.2rem 0; }
table { border-collapse: collapse; margin-top: 0.5rem; font-size: 0.9rem; }
th, td { border: 1px solid #d0d0d0; padding: 0.3rem 0.55rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
.status { font-weight: 700; padding: 0.1rem 0.45rem; border-radius: 0.25rem; white-space: nowrap; }
.pass { color: #1b5e20; font-weight: 700; } .fail { color: #b71c1c; font-weight: 700; }
ul { margin: 0; padding-left: 1.1rem; }
"""


def summary_folder(report_dir: str | Path, stream: str, run_name: str) -> Path:
    return Path(report_dir) / stream / "runs" / run_name


def write_summary(result: QualityRunResult) -> None:
    """Write result.summary_json (the run's QualitySummary) and result.summary_html."""
    write_quality_summary(result.summary_json, result.summary())
    Path(result.summary_html).write_text(render_html(result))


def render_html(result: QualityRunResult) -> str:
    e = _text
    verdict = (
        "all checks passed"
        if result.success
        else "checks failed: " + ", ".join(c.name for c in result.checks if c.ran and not c.success)
    )
    hours = ", ".join(hour_text(h) for h in result.hours_ms) or ("none (stream-wide stall and retention checks only)")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>tidemark quality: {e(result.stream)} / {e(result.run_name)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>Quality of stream {e(result.stream)}</h1>",
        f'<p class="meta">run {e(result.run_name)} at {e(format_event_time(result.now_ms))} '
        f'&middot; <span class="{"pass" if result.success else "fail"}">{e(verdict)}</span></p>',
        f'<p class="meta">hours checked (UTC, [H, H+1h)): {e(hours)}</p>',
        _data_docs_link(result),
        "<h2>Partitions</h2>",
        _partitions_table(result),
        '<p class="meta">status order, worst wins: '
        + " &lt; ".join(_badge(status) for status in STATUS_ORDER)
        + "</p>",
        "<h2>Checks</h2>",
        _checks_table(result),
        "<h2>Recovery requests</h2>",
        _recovery_list(result),
        "<h2>Damage in the lake's log</h2>",
        _damage_list(result),
    ]
    if result.hours:
        parts += ["<h2>Per hour and partition</h2>", _hours_table(result)]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _partitions_table(result: QualityRunResult) -> str:
    header = ("partition", "status", "records", "lag", "W_p", "holes", "late", "quarantined", "lost", "reason")
    rows = []
    for p in result.partitions:
        watermark = format_optional_event_time(p.partition_watermark_ms)
        rows.append(
            "<tr>"
            + _cell(p.partition, numeric=True)
            + f"<td>{_badge(p.status)}</td>"
            + _cell(p.records, numeric=True)
            + _cell("" if p.lag is None else p.lag, numeric=True)
            + _cell(watermark or "")
            + _cell(spans_text(p.holes) if p.holes else "")
            + _cell(p.late, numeric=True)
            + _cell(p.quarantined, numeric=True)
            + _cell(spans_text(p.lost) if p.lost else "")
            + "<td>"
            + _list(_reason_first(p.reason, p.reasons))
            + "</td>"
            + "</tr>"
        )
    return _table(header, rows)


def _reason_first(reason: str, reasons) -> list[str]:
    """The sentence behind the status first, then the others."""
    return [reason, *(other for other in reasons if other != reason)]


def _checks_table(result: QualityRunResult) -> str:
    header = ("check", "result", "rows", "failed rules", "warnings", "facts (s)", "GX (s)")
    rows = []
    for c in result.checks:
        outcome = "not run" if not c.ran else ("passed" if c.success else "failed")
        css = "" if not c.ran else ("pass" if c.success else "fail")
        rows.append(
            "<tr>"
            + _cell(c.name)
            + f'<td class="{css}">{_text(outcome)}</td>'
            + _cell(c.rows, numeric=True)
            + _cell(", ".join(c.failed_rules))
            + _cell(", ".join(c.warned_rules))
            + _cell(f"{c.facts_seconds:.2f}", numeric=True)
            + _cell(f"{c.gx_seconds:.2f}", numeric=True)
            + "</tr>"
        )
    return _table(header, rows)


def _recovery_list(result: QualityRunResult) -> str:
    if not result.recovery_requests:
        return '<p class="meta">none</p>'
    items = []
    for request in result.recovery_requests:
        items.append(
            f"<li>partition {_text(request.partition)}: offsets {_text(spans_text(request.ranges, limit=10))} "
            f"&mdash; {_text(request.reason)}</li>"
        )
    return "<ul>" + "".join(items) + "</ul>"


def _damage_list(result: QualityRunResult) -> str:
    """The commits since the previous run that removed or rewrote rows, and the hours they sent back."""
    if not result.damage:
        note = (
            "a sweep reads no log: it checks every hour the source log retains"
            if result.sweep
            else "none since the previous run"
        )
        return f'<p class="meta">{_text(note)}</p>'
    items = [
        f"<li>{_text(d.sentence())} &mdash; hours checked again: {_text(', '.join(hour_text(h) for h in d.hours_ms))}</li>"
        for d in result.damage
    ]
    return "<ul>" + "".join(items) + "</ul>"


def _hours_table(result: QualityRunResult) -> str:
    header = (
        "hour",
        "partition",
        "status",
        "records",
        "late",
        "quarantined",
        "ranges",
        "data records",
        "persisted",
        "duplicated offsets",
        "active history hours",
        "longest event-time gap",
        "reason",
    )
    rows = []
    for h in result.hours:
        gap = "" if h.longest_event_time_gap_ms is None else format_duration_ms(h.longest_event_time_gap_ms)
        rows.append(
            "<tr>"
            + _cell(hour_text(h.hour_ms))
            + _cell(h.partition, numeric=True)
            + f"<td>{_badge(h.status)}</td>"
            + "".join(
                _cell(value, numeric=True)
                for value in (
                    h.records,
                    h.late,
                    h.quarantined,
                    h.ranges,
                    h.data_records,
                    h.persisted,
                    h.duplicated_offsets,
                    h.active_history_hours,
                )
            )
            + _cell(gap, numeric=True)
            + "<td>"
            + _list(h.reasons)
            + "</td>"
            + "</tr>"
        )
    return _table(header, rows)


def _data_docs_link(result: QualityRunResult) -> str:
    if not result.data_docs_index:
        return '<p class="meta">Data Docs: no check ran, nothing was validated</p>'
    target = os.path.relpath(result.data_docs_index, Path(result.summary_html).parent)
    href = Path(target).as_posix()
    return f'<p class="meta"><a href="{_text(href)}">Great Expectations Data Docs (every validation)</a></p>'


def _badge(status: QualityStatus) -> str:
    colour, background = _STATUS_COLOURS[status]
    return f'<span class="status" style="color:{colour};background:{background}">{_text(status.value)}</span>'


def _table(header: tuple[str, ...], rows: list[str]) -> str:
    head = "".join(f"<th>{_text(name)}</th>" for name in header)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _cell(value, numeric: bool = False) -> str:
    return f'<td class="n">{_text(value)}</td>' if numeric else f"<td>{_text(value)}</td>"


def _list(lines) -> str:
    lines = list(lines)
    if not lines:
        return ""
    if len(lines) == 1:
        return _text(lines[0])
    return "<ul>" + "".join(f"<li>{_text(line)}</li>" for line in lines) + "</ul>"


def _text(value) -> str:
    return escape(str(value), quote=True)
