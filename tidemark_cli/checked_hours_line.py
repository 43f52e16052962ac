"""The demo's line about which sealed hours the quality checks covered, by whichever run checked them.

A demo's hours are often checked before the demo's own quality run starts: sealing an hour
emits an asset event, and the quality run that event starts gets there first. So the line
names the hours checked since the demo began and the run that checked each, from the per-hour
reports (tidemark.hour_report), instead of only the hours the demo's own run checked.
"""

from __future__ import annotations

from collections.abc import Iterable

from tidemark.hour_report import HourReport


def checked_hours_line(reports: Iterable[HourReport], since_ms: int) -> str:
    """``reports``: every hour report of the stream; ``since_ms``: when the demo began (ms since
    the epoch, UTC). Each run is named as its reports name it (the Airflow run and its task)."""
    reports = sorted(reports, key=lambda report: report.hour_ms)
    recent = [report for report in reports if report.checked_at_ms >= since_ms]
    by_run: dict[str, list[str]] = {}
    for report in recent:
        by_run.setdefault(report.run_name, []).append(report.hour)
    parts = [f"{', '.join(hours)} by {run}" for run, hours in by_run.items()]
    line = f"Hours checked since the demo began: {'; '.join(parts) or 'none (no hour was sealed since)'}."
    if reports:
        line += f" Sealed hours checked so far: {len(reports)}, the latest {reports[-1].hour}."
    return line
