"""CPU-seconds the running embedded stack spends while its streams have nothing new.

    .venv/bin/python benchmarks/stack_idle_cpu.py [--minutes 30] [--results benchmarks/results/stack_idle_cpu.json]

Run it after ``make demo`` with the stack left up and its DAGs unpaused, producing nothing: it
measures what the scheduled runs and the stack's own processes cost, as a user's machine pays it.
Over the window it adds up, per Airflow component (api-server, scheduler, dag-processor,
triggerer, each with everything it started: the scheduler's LocalExecutor runs the tasks, and
each task's spark-submit and JVM, when there is one, are its descendants) and for the Kafka
broker and the loopback S3 and Kinesis, user + system CPU of the live processes plus what their finished children used
(``psutil``'s ``children_user``/``children_system``: a child's CPU moves to its parent when it
ends and is waited for). Reports CPU-seconds per component and per hour, and the DAG runs that
ran in the window (Airflow's database).

The window is wall time: an hour's figure is the window's scaled; a window of 30 minutes holds
6 persist and 3 quality runs of the default schedules.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "stack_idle_cpu.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--home", type=Path, default=Path(os.environ.get("TIDEMARK_HOME", REPO / ".tidemark")))
    args = parser.parse_args()

    roots = _roots(args.home)
    if "airflow" not in roots:
        raise SystemExit(f"Airflow is not running from {args.home} (start the stack: make demo, or tidemark up)")
    started_at = datetime.now(UTC)
    before = _cpu_by_component(roots)
    print(f"measuring {args.minutes:g} minutes from {started_at:%H:%M:%S} UTC: {sorted(before)}", flush=True)
    time.sleep(args.minutes * 60)
    after = _cpu_by_component(_roots(args.home))
    ended_at = datetime.now(UTC)
    window_s = (ended_at - started_at).total_seconds()
    used = {name: round(after.get(name, 0.0) - before.get(name, 0.0), 1) for name in sorted(set(before) | set(after))}
    runs = _dag_runs(args.home / "airflow" / "airflow.db", started_at)
    result = {
        "benchmark": "stack_idle_cpu",
        "measured_from": started_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "window_seconds": round(window_s),
        "machine": {"cores": os.cpu_count()},
        "cpu_seconds": used,
        "cpu_seconds_total": round(sum(used.values()), 1),
        "cpu_seconds_per_hour": {name: round(value * 3600 / window_s, 1) for name, value in used.items()},
        "cpu_seconds_per_hour_total": round(sum(used.values()) * 3600 / window_s, 1),
        "dag_runs_in_window": runs,
    }
    for name, value in used.items():
        print(f"{name:24} {value:8.1f} CPU-s   {result['cpu_seconds_per_hour'][name]:8.1f} per hour")
    print(
        f"{'total':24} {result['cpu_seconds_total']:8.1f} CPU-s   {result['cpu_seconds_per_hour_total']:8.1f} per hour"
    )
    print(f"DAG runs in the window: {runs}")
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written: {args.results}")
    return 0


def _roots(home: Path) -> dict[str, psutil.Process]:
    """The stack's supervising processes from their pid files: Airflow's, the broker's, and the
    loopback S3's and Kinesis's when they run."""
    roots = {}
    for name, pid_file in (
        ("airflow", home / "airflow" / "standalone.pid"),
        ("kafka", home / "kafka" / "kafka.pid"),
        ("loopback s3", home / "s3" / "s3proxy.pid"),
        ("loopback kinesis", home / "kinesis" / "moto.pid"),
    ):
        try:
            roots[name] = psutil.Process(int(pid_file.read_text().strip()))
        except (FileNotFoundError, ValueError, psutil.NoSuchProcess):
            continue
    return roots


def _cpu_by_component(roots: dict[str, psutil.Process]) -> dict[str, float]:
    """CPU-seconds so far per component: Airflow's supervisor itself, each of its children with
    its whole tree, and the broker with its tree."""
    totals: dict[str, float] = {}
    for name, root in roots.items():
        if name == "airflow":
            totals["airflow supervisor"] = _own(root)
            for child in _children(root):
                totals[f"airflow {_component(child)}"] = totals.get(f"airflow {_component(child)}", 0.0) + _tree(child)
        else:
            totals[name] = _tree(root)
    return totals


def _component(process: psutil.Process) -> str:
    try:
        words = process.cmdline()
    except psutil.Error:
        return "gone"
    for known in ("api-server", "scheduler", "dag-processor", "triggerer"):
        if known in words:
            return known
    return " ".join(words[:3])[-40:]


def _children(process: psutil.Process) -> list[psutil.Process]:
    try:
        return process.children()
    except psutil.Error:
        return []


def _own(process: psutil.Process) -> float:
    try:
        times = process.cpu_times()
    except psutil.Error:
        return 0.0
    return times.user + times.system + times.children_user + times.children_system


def _tree(process: psutil.Process) -> float:
    total = _own(process)
    try:
        descendants = process.children(recursive=True)
    except psutil.Error:
        descendants = []
    return total + sum(_own(child) for child in descendants)


def _dag_runs(database: Path, since: datetime) -> dict[str, int]:
    """DAG runs started in the window, per DAG (Airflow's SQLite database)."""
    if not database.exists():
        return {}
    with sqlite3.connect(database) as connection:
        rows = connection.execute(
            "SELECT dag_id, COUNT(*) FROM dag_run WHERE start_date >= ? GROUP BY dag_id",
            (since.strftime("%Y-%m-%d %H:%M:%S"),),
        ).fetchall()
    return dict(rows)


if __name__ == "__main__":
    sys.exit(main())
