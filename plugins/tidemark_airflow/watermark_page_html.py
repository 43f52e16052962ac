"""The watermark page's HTML: one stream's partitions, its two charts and its report links.

Plain HTML with inline CSS and server-drawn SVG, so the page works inside the Airflow UI's
iframe with nothing to download. Every value from the lake or the config is escaped.
"""

from __future__ import annotations

from html import escape
from urllib.parse import quote

from tidemark.event_time_text import format_event_time
from tidemark.stream_glance import StreamGlance
from tidemark.stream_overview import ATTENTION, NO_LEDGER, StreamOverview
from tidemark_airflow.quality_reports import QualityRunReport, StreamReports
from tidemark_airflow.watermark_chart import line_chart

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:16px;color:#222}
h1{font-size:20px;margin:0 0 4px} .meta{color:#555;margin:2px 0}
table{border-collapse:collapse;margin:12px 0} th,td{padding:4px 8px;border-bottom:1px solid #ddd;text-align:right}
th{background:#f3f3f3} td.text,th.text{text-align:left}
tr.attention td{background:#fde2e1} .status{font-weight:600;padding:1px 6px;border-radius:3px}
.status-ACTIVE{background:#e3f2e1;color:#225c1c} .status-IDLE{background:#eee;color:#555}
.status-STOP,.status-STALL{background:#d62728;color:#fff} .status-LAGGING{background:#ff7f0e;color:#fff}
.status-WARN{background:#ffd34d;color:#333} .status-none{background:#eee;color:#777}
.status-OK{background:#e3f2e1;color:#225c1c} .status-HOLE{background:#9c27b0;color:#fff}
.status-LOST{background:#4a148c;color:#fff} .status-NOT_CHECKED{background:#eee;color:#777}
#filter{font:inherit;padding:4px 8px;width:320px;margin:8px 0}
.chart{margin:16px 0} figcaption{font-weight:600} .legend{display:flex;flex-wrap:wrap;gap:10px;font-size:12px}
.key i{display:inline-block;width:14px;height:4px;margin-right:4px;vertical-align:middle}
.key.attention{font-weight:700;color:#d62728} .note{background:#fff6d6;padding:6px 10px;border-left:4px solid #e0b000}
.empty{color:#777} svg text{font-size:11px;fill:#555}
"""


def _time(ms: int | None) -> str:
    return "–" if ms is None else format_event_time(ms)[:19].replace("T", " ") + "Z"


def _number(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


def page(title: str, body: str) -> str:
    return f'<!doctype html><html><head><meta charset="utf-8"><title>{escape(title)}</title><style>{_STYLE}</style></head><body>{body}</body></html>'


def index_page(glances: list[StreamGlance], prefix: str, text: str = "", total: int | None = None) -> str:
    """Every stream in one line, worst first (tidemark.stream_glance), with a filter: ``text``
    filtered them on the server (``?q=``), and typing in the box filters the rows in place.
    ``prefix``: where the page app is mounted (e.g. /tidemark), for absolute links."""
    rows = "".join(
        f'<tr data-stream="{escape(g.stream)}" data-status="{escape(g.status)}"'
        f' class="{"attention" if g.severity >= _ATTENTION_SEVERITY else ""}">'
        f'<td class=text><a href="{escape(prefix)}/streams/{quote(g.stream)}">{escape(g.stream)}</a></td>'
        f"<td class=text>{escape(g.family or '')}</td>"
        f"<td class=text><span class='status status-{escape(g.status.replace(' ', '_'))}'>{escape(g.status)}</span></td>"
        f"<td>{'–' if g.partition is None else g.partition}</td><td>{_number(g.lag)}</td>"
        f"<td>{g.partitions}</td><td class=text>{escape(g.reason)}</td><td class=text>{_time(g.checked_at_ms)}</td></tr>"
        for g in glances
    )
    counts: dict[str, int] = {}
    for g in glances:
        counts[g.status] = counts.get(g.status, 0) + 1
    tally = " · ".join(f"{count} {status}" for status, count in counts.items())
    shown = (
        f"{len(glances)} of {total} streams"
        if total is not None and total != len(glances)
        else f"{len(glances)} streams"
    )
    return page(
        "tidemark streams",
        "<h1>tidemark: streams, worst first</h1>"
        f'<p class="meta" id="tally">{shown}: {escape(tally) or "none"} · each as its last quality check found it</p>'
        f'<form method="get"><input id="filter" name="q" value="{escape(text)}" placeholder="filter: name, family or status"'
        ' autofocus oninput="tidemarkFilter(this.value)"></form>'
        '<table id="streams"><thead><tr><th class=text>stream</th><th class=text>family</th><th class=text>worst status</th>'
        "<th>partition</th><th>lag</th><th>partitions</th><th class=text>why</th><th class=text>checked at</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
        "<script>function tidemarkFilter(t){t=t.toLowerCase();for(const r of document.querySelectorAll('#streams tbody tr'))"
        "{r.hidden=t&&!r.textContent.toLowerCase().includes(t)}}</script>",
    )


# STALL and worse stand out in the index (as ATTENTION does on a stream's page).
_ATTENTION_SEVERITY = 3


def problem_page(title: str, message: str) -> str:
    return page(title, f'<h1>{escape(title)}</h1><p class="note">{escape(message)}</p>')


def stream_page(overview: StreamOverview, reports: StreamReports, prefix: str, airflow_base: str = "/") -> str:
    """The page of one stream. ``prefix``: where the page app is mounted (e.g. /tidemark);
    ``airflow_base``: the Airflow UI's base URL, for links to DAG runs."""
    attention = [p for p in overview.partitions if p.needs_attention]
    header = (
        f"<h1>{escape(overview.stream)}: partitions and watermarks</h1>"
        f'<p class="meta">Global watermark G: <b id="global-watermark">{_time(overview.global_watermark_ms)}</b> · '
        f'last sealed hour: <b id="last-sealed-hour">{_time(overview.last_sealed_hour_ms)}</b> · '
        f"as of {_time(overview.now_ms)}</p>"
    )
    if attention:
        names = ", ".join(f"{p.partition} ({p.status})" for p in attention)
        header += f'<p class="note" id="attention">Needs attention: partition {escape(names)}.</p>'
    for note in overview.notes:
        header += f'<p class="note">{escape(note)}</p>'
    accepted = [(p.partition, a) for p in overview.partitions for a in p.accepted_lost]
    if accepted:
        items = "".join(
            f"<li>partition {partition}: {escape(a.describe('position'))}</li>" for partition, a in accepted
        )
        header += (
            f'<div class="note" id="accepted-losses">Lost to retention and accepted as lost:<ul>{items}</ul></div>'
        )
    if overview.ledger_rows == 0:
        header += '<p class="note" id="ledger-empty">The ledger has no live rows yet: the persist job has not finished a batch for this stream.</p>'
    attention_labels = {f"partition {p.partition}" for p in attention}
    charts = line_chart(
        "Partition watermarks W_p and the global watermark G",
        overview.watermark_lines,
        attention_labels,
        _time,
        _time,
        emphasised="G",
    )
    charts += line_chart(
        "Lag per partition (offsets not yet read)", overview.lag_lines, attention_labels, _number, _time
    )
    return page(
        f"tidemark · {overview.stream}",
        header + _partition_table(overview) + charts + _reports(overview.stream, reports, prefix, airflow_base),
    )


def _partition_table(overview: StreamOverview) -> str:
    head = (
        "<tr><th>partition</th><th class=text>status</th><th>read position</th><th>log end</th><th>lag</th>"
        "<th class=text>partition watermark</th><th class=text>retention deadline</th><th>late</th><th>quarantined</th>"
        "<th class=text>why</th></tr>"
    )
    rows = []
    for p in overview.partitions:
        status_class = "none" if p.status == NO_LEDGER else p.status
        rows.append(
            f'<tr data-partition="{p.partition}" data-status="{escape(p.status)}" class="{"attention" if p.status in ATTENTION else ""}">'
            f"<td>{p.partition}</td><td class=text><span class='status status-{escape(status_class)}'>{escape(p.status)}</span></td>"
            f"<td>{_number(p.position)}</td><td>{_number(p.log_end)}</td><td>{_number(p.lag)}</td>"
            f"<td class=text>{_time(p.partition_watermark_ms)}</td><td class=text>{_deadline(p.retention_deadline_ms, p.lag)}</td>"
            f"<td>{_number(p.totals.late)}</td><td>{_number(p.totals.quarantined)}</td><td class=text>{escape(p.reason)}</td></tr>"
        )
    return f'<table id="partitions">{head}{"".join(rows)}</table>'


def _deadline(deadline_ms: int | None, lag: int | None) -> str:
    if not lag:
        return "nothing unread"
    return "unknown" if deadline_ms is None else _time(deadline_ms)


def _outcome(run: QualityRunReport) -> str:
    if run.problem:
        return f'<b>summary unreadable</b> <span class="meta">({escape(run.problem)})</span>'
    return "passed" if run.success else "<b>failed</b>"


def _reports(stream: str, reports: StreamReports, prefix: str, airflow_base: str) -> str:
    base = f"{escape(prefix)}/streams/{quote(stream)}/reports"
    parts = ["<h2>Data quality</h2>"]
    if reports.data_docs_index:
        parts.append(
            f'<p><a id="data-docs" href="{base}/{quote(reports.data_docs_index)}">Great Expectations Data Docs</a></p>'
        )
    if not reports.runs:
        parts.append('<p class="empty">No quality run has written a report yet.</p>')
    else:
        dag = f"tidemark_quality__{stream}"
        items = "".join(
            f"<li>{escape(run.finished)} {_outcome(run)}: "
            f'<a href="{base}/{quote(run.summary_html)}">summary</a> · '
            f'<a target="_top" href="{escape(airflow_base.rstrip("/"))}/dags/{quote(dag)}/runs/{quote(run.dag_run_id, safe="")}">DAG run {escape(run.dag_run_id)}</a></li>'
            for run in reports.runs
        )
        parts.append(f'<h3>Latest quality runs</h3><ul id="quality-runs">{items}</ul>')
    if reports.hours:
        hours = "".join(
            f'<li><a href="{base}/{quote(h)}">{escape(h.split("/")[-1][:-5])}</a></li>' for h in reports.hours
        )
        parts.append(f'<h3>Per-hour summaries</h3><ul id="hour-reports">{hours}</ul>')
    return "".join(parts)
