"""Airflow in a child process: it reads its configuration once, when first imported, so tests
never import it into the pytest process.

Starting Airflow costs seconds before any task runs (imports, the in-process execution API,
DAG sync), so DAG runs that share an environment share one process: ``dags_test_many`` runs
them one after another there, each exactly as ``airflow dags test`` runs it (the CLI's own
parser and command), and hands back each run's exit status and output.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


def run_python(environment: dict[str, str], code: str, timeout_s: float = 300) -> subprocess.CompletedProcess:
    """Run Python code in a child process with the given environment."""
    return subprocess.run(
        [sys.executable, "-c", code], env=environment, capture_output=True, text=True, timeout=timeout_s
    )


@dataclass(frozen=True)
class DagTestRun:
    """One ``airflow dags test`` run: ``returncode`` 0 when the DAG run succeeded (the CLI's exit
    status), and ``output``, its stdout and stderr in the order they were written."""

    returncode: int
    output: str


# Lines that frame each run's output in the shared process; nothing Airflow prints looks like them.
_RUN_STARTS = "===tidemark-dags-test-run-starts==="
_RUN_ENDS = "===tidemark-dags-test-run-ends==="

_RUNNER = f"""
import json, sys, traceback
from airflow import configuration  # first, as airflow's own __main__ does (import cycles otherwise)
from airflow.cli import cli_parser
from airflow.configuration import write_default_airflow_configuration_if_needed

write_default_airflow_configuration_if_needed()
parser = cli_parser.get_parser()
for arguments in json.loads(sys.argv[1]):
    print({_RUN_STARTS!r}, flush=True)
    try:
        args = parser.parse_args(["dags", "test", *arguments])
        args.func(args)
        code = 0
    except SystemExit as exit_:  # "DagRun failed", or a refused argument
        if exit_.code not in (None, 0):
            print(exit_.code, file=sys.stderr)
        code = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stderr.flush()
    print({_RUN_ENDS!r}, code, flush=True)
"""


def dags_test_many(environment: dict[str, str], runs: list[list[str]], timeout_s: float = 1200) -> list[DagTestRun]:
    """``airflow dags test <dag_id> [args]`` for each of ``runs`` (``[dag_id, *args]``), in order,
    in one child process with ``environment``: one Airflow start for all of them. Each run is
    what the CLI does for it alone; the Airflow database keeps what each run left for the next."""
    result = subprocess.run(
        [sys.executable, "-c", _RUNNER, json.dumps(runs)],
        env={**environment, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout_s,
    )
    finished = []
    for chunk in result.stdout.split(_RUN_STARTS + "\n")[1:]:
        output, ends, status = chunk.rpartition(_RUN_ENDS)
        if ends:
            finished.append(DagTestRun(int(status.split()[0]), output))
    assert len(finished) == len(runs), (
        f"the Airflow process ended (exit {result.returncode}) after {len(finished)} of {len(runs)} DAG runs:\n"
        + result.stdout[-5000:]
    )
    return finished


def dags_test(environment: dict[str, str], dag_id: str, *args: str, timeout_s: float = 900) -> DagTestRun:
    """``airflow dags test <dag_id> [args]`` in a child process: one whole DAG run, tasks in order."""
    (run,) = dags_test_many(environment, [[dag_id, *args]], timeout_s)
    return run


def airflow_rows(environment: dict[str, str], query: str, *parameters) -> list[tuple]:
    """The rows of ``query`` on the embedded stack's Airflow database (SQLite, opened read-only):
    what the scheduler would read, at the cost of milliseconds rather than an Airflow start."""
    database = Path(environment["AIRFLOW_HOME"]) / "airflow.db"
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as connection:
        return connection.execute(query, parameters).fetchall()


def dag_runs(environment: dict[str, str], dag_id: str) -> dict[str, dict]:
    """Every run Airflow's database knows of ``dag_id``: run id → the conf it was triggered with.
    The database is shared by the session's DAG tests: compare before and after, never count
    from zero."""
    rows = airflow_rows(environment, "SELECT run_id, conf FROM dag_run WHERE dag_id = ?", dag_id)
    return {run_id: json.loads(conf) if conf else {} for run_id, conf in rows}
