"""The quality reports a stream has on disk, newest first, for the watermark page's links.

Layout (written by expectations/quality_run.py under the reports root, see reports_root()):
``<stream>/runs/<run_name>/summary.{json,html}``, ``<stream>/hours/<hour>Z.json`` and the
Great Expectations Data Docs under ``<stream>/gx/uncommitted/data_docs/local_site/``. A run
name is ``<dag run id>.<task id>``, which is how a summary links to the DAG run behind it.
summary.json is read by its one type, tidemark.quality_summary.QualitySummary.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tidemark.quality_summary import QualitySummaryError, read_quality_summary

DATA_DOCS_INDEX = Path("gx") / "uncommitted" / "data_docs" / "local_site" / "index.html"


@dataclass(frozen=True)
class QualityRunReport:
    run_name: str
    dag_run_id: str  # the quality DAG's run that produced it
    finished: str  # ISO-8601 UTC, from the summary; "" when it could not be read
    success: bool
    summary_html: str  # relative to the stream's reports folder
    problem: str | None = None  # why summary.json could not be read (the run is still listed)


@dataclass(frozen=True)
class StreamReports:
    runs: tuple[QualityRunReport, ...]  # newest first
    hours: tuple[str, ...]  # hour report files, relative to the stream's folder, newest first
    data_docs_index: str | None  # relative to the stream's folder; None before the first check


def stream_reports(reports_root: Path, stream: str, most: int = 10) -> StreamReports:
    """The newest ``most`` quality runs and hour reports of ``stream`` (none when it has no folder)."""
    folder = reports_root / stream
    runs = sorted(
        (_run_report(path) for path in (folder / "runs").glob("*/summary.json")),
        key=lambda run: (run[0], run[1].run_name),
        reverse=True,
    )
    hours = sorted((p.name for p in (folder / "hours").glob("*.json")), reverse=True)[:most]
    return StreamReports(
        runs=tuple(report for _, report in runs[:most]),
        hours=tuple(f"hours/{name}" for name in hours),
        data_docs_index=str(DATA_DOCS_INDEX) if (folder / DATA_DOCS_INDEX).exists() else None,
    )


def _run_report(path: Path) -> tuple[int, QualityRunReport]:
    """(when the run checked, in ms, for the order; its line). A summary that cannot be read is
    listed with the reason, ordered by the file's time, so a person sees it rather than a gap."""
    name = path.parent.name
    html = f"runs/{name}/summary.html"
    try:
        summary = read_quality_summary(path)
    except QualitySummaryError as error:
        try:
            written_ms = int(path.stat().st_mtime * 1000)
        except OSError:
            written_ms = 0  # gone since the glob
        return written_ms, QualityRunReport(name, name.rsplit(".", 1)[0], "", False, html, problem=str(error))
    return summary.now_ms, QualityRunReport(name, name.rsplit(".", 1)[0], summary.now, summary.success, html)
