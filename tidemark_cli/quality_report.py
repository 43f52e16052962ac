"""A stream's latest quality run, read from its summary.json and shown as tables: no Spark.

The quality DAG writes each run's summary under ``$TIDEMARK_HOME/reports/<stream>/runs/<run>/``
(summary.json, summary.html beside it, which links the Data Docs); its shape is documented in
expectations/quality_result.py. Only the fields shown here are read, once, into typed classes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tidemark_cli.command_failed import CommandFailed
from tidemark_cli.status_colours import status_text


@dataclass(frozen=True)
class PartitionLine:
    partition: int
    status: str
    records: int
    late: int
    quarantined: int
    lag: int | None
    partition_watermark: str | None  # ISO-8601, UTC
    holes: tuple[tuple[int, int], ...]
    lost: tuple[tuple[int, int], ...]
    reason: str


@dataclass(frozen=True)
class CheckLine:
    name: str
    ran: bool
    success: bool
    failed_rules: tuple[str, ...]


@dataclass(frozen=True)
class QualitySummary:
    stream: str
    run_name: str
    checked_at: str  # ISO-8601, UTC
    hours: tuple[str, ...]
    success: bool
    partitions: tuple[PartitionLine, ...]
    checks: tuple[CheckLine, ...]
    recovery_requests: tuple[dict, ...]  # the recover DAG's params, as the run triggered them
    summary_json: Path
    summary_html: Path
    data_docs_index: Path | None  # None: no check ran, nothing was validated

    @classmethod
    def read(cls, path: Path) -> "QualitySummary":
        """Read one run's summary.json; CommandFailed naming the file when it is not one."""
        try:
            data = json.loads(path.read_text())
            paths = data.get("paths") or {}
            docs = paths.get("data_docs_index")
            return cls(
                stream=data["stream"],
                run_name=data["run_name"],
                checked_at=data["now"],
                hours=tuple(data.get("hours") or ()),
                success=bool(data["success"]),
                partitions=tuple(_partition(p) for p in data["partitions"]),
                checks=tuple(
                    CheckLine(c["name"], bool(c["ran"]), bool(c["success"]), tuple(c.get("failed_rules") or ()))
                    for c in data.get("checks") or ()
                ),
                recovery_requests=tuple(data.get("recovery_requests") or ()),
                summary_json=path,
                summary_html=Path(paths.get("summary_html") or path.with_suffix(".html")),
                data_docs_index=Path(docs) if docs else None,
            )
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise CommandFailed(
                f"{path} is not a quality summary this CLI can read ({type(error).__name__}: {error}); "
                "open its summary.html beside it, or run the quality DAG again"
            ) from None


def _partition(data: dict) -> PartitionLine:
    return PartitionLine(
        partition=int(data["partition"]),
        status=str(data["status"]),
        records=int(data.get("records") or 0),
        late=int(data.get("late") or 0),
        quarantined=int(data.get("quarantined") or 0),
        lag=data.get("lag"),
        partition_watermark=data.get("partition_watermark"),
        holes=tuple((int(s), int(e)) for s, e in data.get("holes") or ()),
        lost=tuple((int(s), int(e)) for s, e in data.get("lost") or ()),
        reason=str(data.get("reason") or ""),
    )


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


def print_summary(console: Console, summary: QualitySummary) -> None:
    """The run's verdict, one row per partition (status in colour), the checks, the recovery
    requests, and where the HTML summary and the Data Docs are (paths never wrapped)."""
    verdict = (
        Text("all checks passed", style="bold green")
        if summary.success
        else Text("checks failed: " + ", ".join(c.name for c in summary.checks if c.ran and not c.success), style="bold red")
    )
    console.print(
        Text.assemble((f"Quality of stream {summary.stream}", "bold"), f", run {summary.run_name} at {summary.checked_at}: ", verdict)
    )
    hours = ", ".join(summary.hours) or "none (the stream-wide stall and retention checks only)"
    console.print(Text(f"Hours checked (UTC, [H, H+1h)): {hours}"))
    console.print(partitions_table(summary))
    _print_reasons(console, summary)
    console.print(checks_table(summary))
    if summary.recovery_requests:
        console.print(Text("Recovery requested:", style="bold"))
        for request in summary.recovery_requests:
            ranges = ", ".join(f"{s}-{e}" for s, e in request.get("ranges", []))
            console.print(Text(f"  partition {request.get('partition')}: offsets {ranges}: {request.get('reason', '')}"))
    console.print(Text(f"HTML summary: {summary.summary_html}"), soft_wrap=True)
    docs = summary.data_docs_index or "none (no check ran, nothing was validated)"
    console.print(Text(f"Data Docs:    {docs}"), soft_wrap=True)


def partitions_table(summary: QualitySummary) -> Table:
    """One row per partition; holes and lost offsets get columns only when a partition has some."""
    missing = any(p.holes or p.lost for p in summary.partitions)
    table = Table(title="Partitions (status: the worst any check gave)", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for name in ("partition", "status", "watermark (UTC)", "lag", "records", "late", "quarantined", *(("holes", "lost") if missing else ())):
        table.add_column(name, justify="left" if name in ("status", "watermark (UTC)", "holes", "lost") else "right", no_wrap=True)
    for p in summary.partitions:
        row = [
            str(p.partition),
            status_text(p.status),
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
        if p.status != "OK":
            console.print(Text.assemble(f"partition {p.partition} ", status_text(p.status), f": {p.reason}"))


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
