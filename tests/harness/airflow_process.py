"""Airflow in a child process: it reads its configuration once, when first imported, so tests
never import it into the pytest process."""

from __future__ import annotations

import subprocess
import sys


def run_python(environment: dict[str, str], code: str, timeout_s: float = 300) -> subprocess.CompletedProcess:
    """Run Python code in a child process with the given environment."""
    return subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True, timeout=timeout_s)


def dags_test(environment: dict[str, str], dag_id: str, *args: str, timeout_s: float = 900) -> subprocess.CompletedProcess:
    """``airflow dags test <dag_id> [args]`` in a child process: one whole DAG run, tasks in order."""
    return subprocess.run(
        [sys.executable, "-m", "airflow", "dags", "test", dag_id, *args],
        env=environment, capture_output=True, text=True, timeout=timeout_s,
    )  # fmt: skip


def dag_run_ids(environment: dict[str, str], dag_id: str) -> set[str]:
    """The run ids ``airflow dags list-runs`` knows for ``dag_id`` (the Airflow database is shared
    by the session's DAG tests: compare before and after, never count from zero)."""
    import json

    listed = subprocess.run(
        [sys.executable, "-m", "airflow", "dags", "list-runs", dag_id, "-o", "json"],
        env=environment, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if listed.returncode != 0 and "does not exist" in listed.stdout + listed.stderr:
        return set()  # no run of it yet: Airflow records a DAG once it first runs
    assert listed.returncode == 0, listed.stderr[-2000:]
    lines = [line for line in listed.stdout.splitlines() if line.startswith("[")]
    return {run["run_id"] for run in json.loads(lines[-1])} if lines else set()
