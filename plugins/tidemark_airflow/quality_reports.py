"""The quality reports a stream has on disk, newest first, for the watermark page's links.

Layout (written by expectations/quality_run.py under the reports root, see reports_root()):
``<stream>/runs/<run_name>/summary.{json,html}``, ``<stream>/hours/<hour>Z.json`` and the
Great Expectations Data Docs under ``<stream>/gx/uncommitted/data_docs/local_site/``. A run
name is ``<dag run id>.<task id>``, which is how a summary links to the DAG run behind it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

DATA_DOCS_INDEX = Path("gx") / "uncommitted" / "data_docs" / "local_site" / "index.html"


@dataclass(frozen=True)
class QualityRunReport:
    run_name: str
    dag_run_id: str  # the quality DAG's run that produced it
    finished: str  # ISO-8601 UTC, from the summary
    success: bool
    summary_html: str  # relative to the stream's reports folder


@dataclass(frozen=True)
class StreamReports:
    runs: tuple[QualityRunReport, ...]  # newest first
    hours: tuple[str, ...]  # hour report files, relative to the stream's folder, newest first
    data_docs_index: str | None  # relative to the stream's folder; None before the first check


def stream_reports(reports_root: Path, stream: str, most: int = 10) -> StreamReports:
    """The newest ``most`` quality runs and hour reports of ``stream`` (none when it has no folder)."""
    folder = reports_root / stream
    runs = []
    for summary in (folder / "runs").glob("*/summary.json"):
        try:
            document = json.loads(summary.read_text())
        except (OSError, ValueError):
            continue  # a run still writing its summary; the next page load shows it
        runs.append((document.get("now_ms", 0), summary.parent.name, document))
    runs.sort(reverse=True)
    hours = sorted((p.name for p in (folder / "hours").glob("*.json")), reverse=True)[:most]
    return StreamReports(
        runs=tuple(
            QualityRunReport(name, name.rsplit(".", 1)[0], doc.get("now", ""), bool(doc.get("success")), f"runs/{name}/summary.html")
            for _, name, doc in runs[:most]
        ),
        hours=tuple(f"hours/{name}" for name in hours),
        data_docs_index=str(DATA_DOCS_INDEX) if (folder / DATA_DOCS_INDEX).exists() else None,
    )
