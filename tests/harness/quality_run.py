"""The quality DAG's check job (expectations/quality_run.py) run in the test's process, with the
arguments its operator gives it."""

from __future__ import annotations

import json
from pathlib import Path

from harness.persist_job import run_in_process


def run_quality(conf: Path, home: Path, tmp_path: Path, run_name: str = "final_check") -> dict:
    """One reconciling quality run of ``telemetry``, reports under ``home``/reports; its result
    (the summary's JSON, also at ``tmp_path``/quality_result.json). Fails the test unless it exits 0."""
    from expectations.quality_run import main

    reports = home / "reports"
    result = tmp_path / "quality_result.json"
    argv = [
        "--stream",
        "telemetry",
        "--conf",
        str(conf),
        "--report-dir",
        str(reports),
        "--gx-dir",
        str(reports / "telemetry" / "gx"),
        "--run-name",
        run_name,
        "--result",
        str(result),
        "--reconcile",
    ]
    code = run_in_process(main, argv, tmp_path / "quality.log")
    assert code == 0, (tmp_path / "quality.log").read_text()[-5000:]
    return json.loads(result.read_text())


def statuses(result: dict) -> dict[int, str]:
    """Each partition's status in a quality run's result."""
    return {p["partition"]: p["status"] for p in result["partitions"]}
