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
