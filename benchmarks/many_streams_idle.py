"""The running stack with a family of N idle topics: what Airflow's scheduler, dag-processor and
triggerer spend an hour (issue 41: under 600 CPU-seconds for 200 idle streams).

    flock /tmp/tidemark-heavy.lock .venv/bin/python benchmarks/many_streams_idle.py \\
        [--topics 200] [--partitions 4] [--max-drivers 2] [--warmup-minutes 5] [--minutes 20] \\
        [--results benchmarks/results/many_streams_idle.json] [--keep FOLDER]

Starts the embedded stack (``tidemark up``) in a home of its own (the project's .tidemark/ is not
touched; the jars are shared), with a streams file of one family of ``--topics`` topics: the
topics are created empty on the stack's broker and the family's listing is written by
``tidemark refresh-topics``, as its refresh DAG would. The family's scheduled DAGs are unpaused
but the daily reconciliation (``tidemark_backfill__family__<family>``: one backfill per member,
``max_drivers`` at a time, once a day, not an idle hour's cost); the benchmark waits until the
first persist tick has finished (it creates every member's tables) and a quality tick started
after it has too (every member's first real check), then ``--warmup-minutes`` more, then measures the stack's CPU for ``--minutes``
exactly as benchmarks/stack_idle_cpu.py measures one idle stream (each component with everything
it started), and stops the stack. ``--keep`` runs it in a folder that stays, task logs and all. The figure is the window's, scaled to an hour; the DAG runs
that fell in the window are listed beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from stack.environment import DAG_FILE_PARSE_INTERVAL_S  # noqa: E402  (after the path is set)

RESULTS = REPO / "benchmarks" / "results" / "many_streams_idle.json"
TIDEMARK = str(Path(sys.executable).parent / "tidemark")
AIRFLOW_PARTS = ("airflow scheduler", "airflow dag-processor", "airflow triggerer")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=4)
    # Two cores: more drivers at once than cores makes Spark's Python workers miss their 10 s
    # connect-back window in the first tick (every member without tables has work).
    parser.add_argument("--max-drivers", type=int, default=2)
    parser.add_argument("--warmup-minutes", type=float, default=5.0, help="after the first ticks")
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument(
        "--parse-interval",
        type=int,
        help=f"[dag_processor] min_file_process_interval, s (default: the stack's, {DAG_FILE_PARSE_INTERVAL_S})",
    )
    parser.add_argument(
        "--parse-only",
        action="store_true",
        help="leave every DAG paused: no run, only the dag-processor's parsing (and the services' idling)",
    )
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument(
        "--keep",
        type=Path,
        help="a folder that does not exist yet: the run makes it, runs the stack in it and keeps it "
        "(its task logs, Airflow's database)",
    )
    args = parser.parse_args(argv)

    from benchmarks.stack_idle_cpu import _cpu_by_component, _dag_runs, _roots

    with _run_folder(args.keep) as folder:
        home = Path(folder) / "home"
        environment = _environment(home)
        conf = _family_conf(Path(folder), environment, args.max_drivers)
        environment["TIDEMARK_CONF"] = str(conf)
        if args.parse_interval:
            environment["AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL"] = str(args.parse_interval)
        try:
            _tidemark(environment, "up")
            _create_topics(environment["TIDEMARK_KAFKA_BOOTSTRAP"], args.topics, args.partitions)
            _tidemark(environment, "refresh-topics", "shops")
            if args.parse_only:
                _unpause_all(environment, unpause=False)
                print(f"every DAG parsed and left paused; {args.warmup_minutes:g} minutes more", flush=True)
            else:
                unpaused = _unpause_all(environment)
                print(f"{unpaused} DAGs unpaused; waiting for every member's first persist and first check", flush=True)
                _wait_for_first_ticks(home / "airflow" / "airflow.db")
                print(f"first ticks done; {args.warmup_minutes:g} minutes more", flush=True)
            time.sleep(args.warmup_minutes * 60)

            started_at = datetime.now(UTC)
            before = _cpu_by_component(_roots(home))
            print(f"measuring {args.minutes:g} minutes from {started_at:%H:%M:%S} UTC", flush=True)
            time.sleep(args.minutes * 60)
            after = _cpu_by_component(_roots(home))
            window_s = (datetime.now(UTC) - started_at).total_seconds()
            runs = _dag_runs(home / "airflow" / "airflow.db", started_at)
            tasks = _task_seconds(home / "airflow" / "airflow.db", started_at)
            parse_interval = (
                environment.get("AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL") or DAG_FILE_PARSE_INTERVAL_S
            )
        finally:
            _tidemark(environment, "down", check=False)

    used = {name: round(after.get(name, 0.0) - before.get(name, 0.0), 1) for name in sorted(set(before) | set(after))}
    per_hour = {name: round(value * 3600 / window_s, 1) for name, value in used.items()}
    airflow_per_hour = round(sum(per_hour.get(name, 0.0) for name in AIRFLOW_PARTS), 1)
    result = {
        "benchmark": "many_streams_idle",
        "measured_from": started_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "topics": args.topics,
        "partitions_per_topic": args.partitions,
        "max_drivers": args.max_drivers,
        "window_seconds": round(window_s),
        "warmup_minutes": args.warmup_minutes,
        "dags_paused": args.parse_only,
        "min_file_process_interval_s": int(parse_interval),
        "machine": {"cores": os.cpu_count()},
        "cpu_seconds": used,
        "cpu_seconds_per_hour": per_hour,
        "scheduler_dag_processor_triggerer_per_hour": airflow_per_hour,
        "dag_runs_in_window": runs,
        # Where the scheduler's CPU went: its task processes (and the spark-submits they start)
        # count as its own; a task's wall seconds in the window say which ticks worked.
        "task_seconds_in_window": tasks,
    }
    for name, value in used.items():
        print(f"{name:24} {value:8.1f} CPU-s   {per_hour[name]:8.1f} per hour")
    print(f"scheduler + dag-processor + triggerer: {airflow_per_hour} CPU-s an hour ({args.topics} idle members)")
    print(f"DAG runs in the window: {runs}")
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written: {args.results}")
    return 0


def _environment(home: Path) -> dict[str, str]:
    """The embedded stack's environment for ``home``, the project's jars shared."""
    from stack.environment import embedded_environment

    jars = os.environ.get("TIDEMARK_JARS") or str(REPO / ".tidemark" / "jars")
    overrides = {"TIDEMARK_HOME": str(home), "TIDEMARK_JARS": jars}
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "TIDEMARK"))}
    return {**base, **overrides, **embedded_environment(REPO, {**base, **overrides})}


def _family_conf(folder: Path, environment: dict[str, str], max_drivers: int) -> Path:
    """One family over every ``shop.NNN`` topic of the stack's broker, the shipped stream's keys."""
    import yaml

    from benchmarks.many_streams import _shape

    shape = _shape()
    shape["source"]["bootstrap_servers"] = environment["TIDEMARK_KAFKA_BOOTSTRAP"]
    path = folder / "streams.yaml"
    family = {"match": r"shop\..+", "max_drivers": max_drivers, **shape}
    path.write_text(yaml.safe_dump({"families": {"shops": family}}))
    return path


def _create_topics(bootstrap: str, topics: int, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    wanted = [NewTopic(f"shop.{index:03d}", partitions, 1) for index in range(topics)]
    for future in admin.create_topics(wanted, operation_timeout=60).values():
        future.result()


def _unpause_all(environment: dict[str, str], unpause: bool = True) -> int:
    """The family's scheduled DAGs unpaused (``unpause``), once the dag-processor has parsed them."""
    os.environ.update(environment)  # the CLI's login reads the stack's home and port from there
    from tidemark_cli.airflow_connection import connect_to_airflow

    api = connect_to_airflow().api
    scheduled = [f"tidemark_{kind}__family__shops" for kind in ("persist", "quality", "sweep", "maintenance")]
    for dag_id in [*scheduled, "tidemark_topics__shops"]:
        api.wait_for_dag(dag_id, timeout_s=600)
        if unpause:
            api.unpause(dag_id)
    return len(scheduled) + 1


def _task_seconds(database: Path, since: datetime) -> dict[str, dict]:
    """Task instances started in the window: per ``dag_id.task_id``, how many and their summed
    wall seconds (Airflow's SQLite database)."""
    import sqlite3

    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection:
        rows = connection.execute(
            "SELECT dag_id || '.' || task_id, COUNT(*), ROUND(SUM(COALESCE(duration, 0)), 1) FROM task_instance "
            "WHERE start_date >= ? GROUP BY 1 ORDER BY 3 DESC",
            (since.strftime("%Y-%m-%d %H:%M:%S"),),
        ).fetchall()
    return {name: {"runs": count, "seconds": seconds} for name, count, seconds in rows}


def _run_folder(keep: Path | None):
    """A temporary folder deleted after the run, or ``keep`` (made, and left in place)."""
    import contextlib

    if keep is None:
        return tempfile.TemporaryDirectory(prefix="tidemark-many-idle-")
    keep.mkdir(parents=True, exist_ok=False)
    return contextlib.nullcontext(str(keep.resolve()))


def _wait_for_first_ticks(database: Path, timeout_s: float = 5400) -> None:
    """Until the family's first persist run has succeeded (it creates every member's tables) and
    then a quality run that started after it ended (every member's first real check: a quality
    tick during the first persist tick checks only the members persisted by then). The window
    after that holds only what an idle hour holds."""
    import sqlite3

    persist, quality = "tidemark_persist__family__shops", "tidemark_quality__family__shops"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection:
            checked = connection.execute(
                "SELECT COUNT(*) FROM dag_run AS q WHERE q.dag_id = ? AND q.state = 'success' AND q.start_date > "
                "(SELECT MIN(p.end_date) FROM dag_run AS p WHERE p.dag_id = ? AND p.state = 'success')",
                (quality, persist),
            ).fetchone()[0]
        if checked:
            return
        time.sleep(15)
    raise SystemExit(f"no {quality} run after a successful {persist} run within {timeout_s / 60:.0f} minutes")


def _tidemark(environment: dict[str, str], *arguments: str, check: bool = True) -> None:
    subprocess.run([TIDEMARK, *arguments], env=environment, cwd=REPO, check=check)


if __name__ == "__main__":
    sys.exit(main())
