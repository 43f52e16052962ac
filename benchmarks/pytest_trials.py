"""Trials that are integration tests: run one test file with its trial settings, collect what each
trial wrote, and write a results file (benchmarks/concurrent_writers.py, benchmarks/crash_trials.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_trials(
    pytest_args: list[str], environment: dict[str, str], file_variable: str
) -> tuple[bool, float, list[dict]]:
    """Run pytest with ``pytest_args`` and ``environment``; the test writes one JSON line a trial
    to the file named by ``file_variable``. Returns (pytest passed, seconds, the trials)."""
    with tempfile.TemporaryDirectory(prefix="tidemark-trials-") as folder:
        trials_file = Path(folder) / "trials.jsonl"
        started = time.monotonic()
        completed = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *pytest_args],
            cwd=REPO,
            env={**os.environ, **environment, file_variable: str(trials_file)},
        )
        seconds = time.monotonic() - started
        trials = [json.loads(line) for line in trials_file.read_text().splitlines()] if trials_file.exists() else []
    return completed.returncode == 0, seconds, trials


def write_results(results: Path, summary: dict, details: str) -> None:
    """Write ``summary`` to ``results`` and print it without its ``details`` key (one row a trial)."""
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != details}, indent=2))
    print(f"results: {results.relative_to(REPO)}")
