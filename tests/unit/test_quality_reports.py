"""The watermark page's list of quality runs, read from each run's summary.json by its one type:
newest check first; a summary that cannot be read is listed, saying why, not skipped."""

from __future__ import annotations

import os

from tidemark.quality_summary import QualitySummary, SummaryPaths, write_quality_summary
from tidemark_airflow.quality_reports import QualityRunReport, stream_reports
from tidemark_airflow.watermark_page_html import _reports

HOUR_MS = 1_795_338_000_000  # 2026-11-22T09:00:00Z


def _write(reports, run_name: str, now_ms: int, now: str, success: bool):
    folder = reports / "telemetry" / "runs" / run_name
    write_quality_summary(
        folder / "summary.json",
        QualitySummary(
            stream="telemetry",
            run_name=run_name,
            now_ms=now_ms,
            now=now,
            hours=(),
            success=success,
            paths=SummaryPaths(summary_json=str(folder / "summary.json"), summary_html=str(folder / "summary.html")),
        ),
    )
    return folder / "summary.json"


def test_runs_are_listed_newest_check_first_and_an_unreadable_summary_says_why(tmp_path):
    reports = tmp_path / "reports"
    older = _write(reports, "scheduled__a.check", HOUR_MS, "2026-11-22T09:00:00.000Z", True)
    _write(reports, "manual__b.check", HOUR_MS + 3_600_000, "2026-11-22T10:00:00.000Z", False)
    broken = reports / "telemetry" / "runs" / "manual__c.check" / "summary.json"
    broken.parent.mkdir(parents=True)
    broken.write_text('{"stream": "telemetry"}')
    # Its file is the newest on disk, but the checks' own times order the readable runs.
    os.utime(older, (HOUR_MS // 1000 + 7200, HOUR_MS // 1000 + 7200))
    os.utime(broken, (HOUR_MS // 1000 + 1800, HOUR_MS // 1000 + 1800))

    runs = stream_reports(reports, "telemetry").runs

    problem = (
        f"{broken} is not a quality summary tidemark can read (Object missing required field `run_name`); "
        "open the summary.html beside it, or run the quality DAG again to write a new one"
    )
    assert runs == (
        QualityRunReport(
            "manual__b.check", "manual__b", "2026-11-22T10:00:00.000Z", False, "runs/manual__b.check/summary.html"
        ),
        QualityRunReport(
            "manual__c.check", "manual__c", "", False, "runs/manual__c.check/summary.html", problem=problem
        ),
        QualityRunReport(
            "scheduled__a.check",
            "scheduled__a",
            "2026-11-22T09:00:00.000Z",
            True,
            "runs/scheduled__a.check/summary.html",
        ),
    )
    html = _reports("telemetry", stream_reports(reports, "telemetry"), "/tidemark", "/")
    assert "<b>summary unreadable</b>" in html and "Object missing required field `run_name`" in html
