"""A stream's latest quality run, read from its summary.json and shown as tables: no Spark.

The quality DAG writes each run's summary under ``$TIDEMARK_HOME/reports/<stream>/runs/<run>/``
(summary.json, summary.html beside it, which links the Data Docs). summary.json is one typed value,
tidemark.quality_summary.QualitySummary, read here by that type.
"""

from __future__ import annotations

from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tidemark.quality_status import QualityStatus
from tidemark.quality_summary import QualitySummary, QualitySummaryError, read_quality_summary
from tidemark_cli.command_failed import CommandFailed
from tidemark_cli.status_colours import status_text


def read_summary(path: Path) -> QualitySummary:
    """Read one run's summary.json; CommandFailed naming the file (and the field) when it is not one."""
    try:
        return read_quality_summary(path)
    except QualitySummaryError as error:
        raise CommandFailed(str(error)) from None


def runs_folder(reports_root: Path, stream: str) -> Path:
    return reports_root / stream / "runs"


def latest_summary(reports_root: Path, stream: str, run: str | None = None) -> Path:
    """The summary.json of run ``run``, or of the newest run (by the time its summary was written).

    CommandFailed saying how to get one when there is none."""
    runs = runs_folder(reports_root, stream)
    if run is not None:
        path = runs / run / "summary.json"
        if not path.is_file():
            known = sorted(p.parent.name for p in runs.glob("*/summary.json"))
            raise CommandFailed(
                f"no quality run {run!r} of stream {stream!r} in {runs}; "
                + (f"the runs there: {', '.join(known[-10:])}" if known else "no run has written a summary yet")
            )
        return path
    summaries = sorted(runs.glob("*/summary.json"), key=lambda path: path.stat().st_mtime)
    if not summaries:
        raise CommandFailed(
            f"no quality summary of stream {stream!r} in {runs}: the quality DAG tidemark_quality__{stream} has not "
            "finished a run yet. `tidemark demo` runs it; or trigger it in the Airflow UI (start the stack with `tidemark up`)."
        )
    return summaries[-1]


def print_summary(console: Console, summary: QualitySummary, summary_json: Path) -> None:
    """The run's verdict, one row per partition (status in colour), the checks, the recovery
    requests, and where the HTML summary (beside ``summary_json``, the file read) and the Data
    Docs are (paths never wrapped)."""
    verdict = Text(summary.verdict, style="bold green" if summary.success else "bold red")
    console.print(
        Text.assemble(
            (f"Quality of stream {summary.stream}", "bold"), f", run {summary.run_name} at {summary.now}: ", verdict
        )
    )
    hours = ", ".join(summary.hours) or "none (the stream-wide stall and retention checks only)"
    console.print(Text(f"Hours checked (UTC, [H, H+1h)): {hours}"))
    console.print(partitions_table(summary))
    _print_reasons(console, summary)
    console.print(checks_table(summary))
    if summary.recovery_requests:
        console.print(Text("Recovery requested:", style="bold"))
        for request in summary.recovery_requests:
            ranges = ", ".join(f"{r.start}-{r.end}" for r in request.ranges)
            console.print(Text(f"  partition {request.partition}: offsets {ranges}: {request.reason}"))
    console.print(Text(f"HTML summary: {summary_json.with_suffix('.html')}"), soft_wrap=True)
    docs = summary.paths.data_docs_index or "none (no check ran, nothing was validated)"
    console.print(Text(f"Data Docs:    {docs}"), soft_wrap=True)


def partitions_table(summary: QualitySummary) -> Table:
    """One row per partition; holes and lost offsets get columns only when a partition has some."""
    missing = any(p.holes or p.lost for p in summary.partitions)
    table = Table(
        title="Partitions (status: the worst any check gave)", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False
    )
    for name in (
        "partition",
        "status",
        "watermark (UTC)",
        "lag",
        "records",
        "late",
        "quarantined",
        *(("holes", "lost") if missing else ()),
    ):
        table.add_column(
            name, justify="left" if name in ("status", "watermark (UTC)", "holes", "lost") else "right", no_wrap=True
        )
    for p in summary.partitions:
        row = [
            str(p.partition),
            status_text(p.status.value),
            _second(p.partition_watermark),
            "" if p.lag is None else f"{p.lag:,}",
            f"{p.records:,}",
            f"{p.late:,}",
            f"{p.quarantined:,}",
        ]
        table.add_row(*row, *((_spans(p.holes), _spans(p.lost)) if missing else ()))
    return table


def _print_reasons(console: Console, summary: QualitySummary) -> None:
    """Why each partition that is not OK is not: the sentence behind its status."""
    for p in summary.partitions:
        if p.status is not QualityStatus.OK:
            console.print(Text.assemble(f"partition {p.partition} ", status_text(p.status.value), f": {p.reason}"))
        for accepted in p.accepted_lost:  # no longer a failure, never out of sight
            console.print(
                Text(
                    f"partition {p.partition}: [{accepted.start}, {accepted.end}) lost to retention, accepted as lost "
                    f"by {accepted.accepted_by} at {accepted.accepted_at}",
                    style="magenta",
                )
            )


def checks_table(summary: QualitySummary) -> Table:
    table = Table(title="Checks", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("check")
    table.add_column("result")
    table.add_column("failed rules", overflow="fold")
    for check in summary.checks:
        if not check.ran:
            result = Text("not run", style="dim")
        else:
            result = Text("passed", style="green") if check.success else Text("failed", style="bold red")
        table.add_row(check.name, result, ", ".join(check.failed_rules))
    return table


def _second(iso_time: str | None) -> str:
    """'2026-11-23T08:08:05.468Z' → '2026-11-23 08:08:05': the column's heading says UTC."""
    return "" if not iso_time else iso_time.replace("T", " ")[:19]


def _spans(spans: tuple[tuple[int, int], ...], limit: int = 3) -> str:
    shown = ", ".join(f"{start}-{end}" for start, end in spans[:limit])
    return shown + (f" (+{len(spans) - limit} more)" if len(spans) > limit else "")
