"""What an idle stream costs: the scheduled runs of one stream whose topic has nothing new.

    .venv/bin/python benchmarks/idle_cost.py [--runs 3] [--results benchmarks/results/idle_cost.json]
    make bench SCENARIO=idle

Sets up a broker, a lake and an Airflow home of its own in a scratch folder; produces 4,000
records of two to three hours ago on 4 partitions and lets the stream's DAGs read and check them
once (persist, quality, offline devices: the warm-up, reported but not counted). Then, with
nothing new in the topic, runs each DAG ``--runs`` times, each run as Airflow's
``airflow dags test`` in a process of its own, and measures per run:

- wall seconds of the whole process, and the task's own duration as Airflow recorded it;
- CPU seconds (user + system) of the process and everything it started and waited for
  (spark-submit's JVM and its Python workers included), from getrusage(RUSAGE_CHILDREN);
- whether a Spark job was started (spark-submit in the output).

An ``airflow dags test`` process also pays for starting Airflow, which a long-lived worker of the
embedded stack pays once: a DAG with one empty task is measured the same way and reported as the
floor. The hour of an idle stream is estimated from the schedules of conf/streams.yaml (persist
every 5 minutes, quality every 10: 12 and 6 runs; the offline-device detector runs per sealed
hour, none when idle) as runs per hour x CPU per run, with and without the floor.

Prints and writes the results (JSON). Runs against the checkout the script sits in, so the
same script in a checkout of an older commit measures "before".
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.scratch_environment import scratch_broker  # noqa: E402
from connectors.jars import ensure_jars, shared_jars_root  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "idle_cost.json"
STREAM = "telemetry"
TOPIC = "idle_bench"
PARTITIONS = 4
RUNS_PER_HOUR = {"persist": 12, "quality": 6, "offline_devices": 0}

FLOOR_DAG = """
import pendulum
from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import dag


@dag(dag_id="idle_bench_floor", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False)
def idle_bench_floor():
    EmptyOperator(task_id="nothing")


idle_bench_floor()
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="measured runs of each DAG")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()

    jars = shared_jars_root()
    ensure_jars(jars, ["kafka", "delta"])
    with tempfile.TemporaryDirectory(prefix="tidemark-idle-bench-") as folder:
        scratch = Path(folder)
        with scratch_broker(scratch, jars) as broker:
            broker.create_topic(TOPIC, PARTITIONS)
            _produce_old_records(broker.bootstrap)
            environment = _airflow_environment(scratch, broker.bootstrap, jars)
            warm_up = {kind: _measure(environment, dag_id) for kind, dag_id in _dags().items()}
            for kind, run in warm_up.items():
                print(
                    f"warm-up {kind:16} {run['wall_seconds']:6.1f} s wall {run['cpu_seconds']:6.1f} CPU-s", flush=True
                )
                if run["returncode"] != 0:
                    print(run["output_tail"], file=sys.stderr)
                    raise SystemExit(f"the warm-up run of {kind} failed: nothing after it would mean anything")
            floor = [_measure(environment, "idle_bench_floor") for _ in range(args.runs)]
            measured = {
                kind: [_measure(environment, dag_id) for _ in range(args.runs)] for kind, dag_id in _dags().items()
            }

    result = _summary(args.runs, warm_up, floor, measured)
    _print(result)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written: {args.results}")
    return 0


def _dags() -> dict[str, str]:
    return {
        "persist": f"tidemark_persist__{STREAM}",
        "quality": f"tidemark_quality__{STREAM}",
        "offline_devices": f"tidemark_offline_devices__{STREAM}",
    }


def _produce_old_records(bootstrap: str) -> None:
    """1,000 records per partition, event (and log) times spread over [now - 3 h, now - 2 h): once
    read, every partition is IDLE, and the hours before G are sealed."""
    from confluent_kafka import Producer

    now_ms = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(4_000):
        event_ms = now_ms - 10_800_000 + i * 900
        value = json.dumps(
            {
                "device_id": f"scooter-{i % 40}",
                "event_time": datetime.fromtimestamp(event_ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                "battery": 50,
                "lat": 52.5,
                "lon": 13.4,
            }
        )
        producer.produce(TOPIC, value=value.encode(), partition=i % PARTITIONS, timestamp=event_ms)
    producer.flush(30)


def _airflow_environment(scratch: Path, bootstrap: str, jars: Path) -> dict[str, str]:
    """The embedded stack's environment with its state in ``scratch``, one stream (the shipped
    telemetry stream on the benchmark's topic), the repo's DAGs and a floor DAG, a migrated database."""
    import yaml

    from stack.environment import embedded_environment

    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    stream = document["streams"][STREAM]
    stream["source"].update(bootstrap_servers=bootstrap, topic=TOPIC, partitions=PARTITIONS)
    stream.pop("alerts", None)
    document["streams"] = {STREAM: stream}
    conf = scratch / "streams.yaml"
    conf.write_text(yaml.safe_dump(document))
    dags = scratch / "dags"
    dags.mkdir()
    for dag_file in (REPO / "dags").glob("*.py"):
        (dags / dag_file.name).symlink_to(dag_file)
    (dags / "idle_bench_floor.py").write_text(FLOOR_DAG)
    home = scratch / "home"
    overrides = {
        "TIDEMARK_HOME": str(home),
        "TIDEMARK_JARS": str(jars),
        "TIDEMARK_CONF": str(conf),
        "TIDEMARK_KAFKA_BOOTSTRAP": bootstrap,
        "AIRFLOW_HOME": str(home / "airflow"),
        "TIDEMARK_LAKE_ROOT": str(scratch / "lake"),
        "TIDEMARK_CHECKPOINT_ROOT": str(scratch / "checkpoints"),
    }
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "TIDEMARK"))}
    environment = {
        **base,
        **overrides,
        **embedded_environment(REPO, {**base, **overrides}),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "PYTHONPATH": str(REPO),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[*]"}),
    }
    migrate = subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"], env=environment, capture_output=True, text=True, timeout=600
    )
    if migrate.returncode != 0:
        raise SystemExit(f"airflow db migrate failed:\n{migrate.stderr[-3000:]}")
    return environment


def _measure(environment: dict[str, str], dag_id: str) -> dict:
    """One ``airflow dags test`` of ``dag_id`` in a process of its own: wall, CPU of its whole
    tree, the task durations Airflow recorded, whether spark-submit ran."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "airflow", "dags", "test", dag_id],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=1800,
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "dag_id": dag_id,
        "returncode": done.returncode,
        "wall_seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "task_seconds": _task_seconds(environment, dag_id),
        "spark_started": "spark-submit" in done.stdout,
        "output_tail": done.stdout[-4000:] if done.returncode else "",
    }


def _task_seconds(environment: dict[str, str], dag_id: str) -> dict[str, float]:
    """The duration Airflow recorded for each task of the newest run of ``dag_id``."""
    database = Path(environment["AIRFLOW_HOME"]) / "airflow.db"
    with sqlite3.connect(database) as connection:
        run = connection.execute(
            "SELECT run_id FROM dag_run WHERE dag_id = ? ORDER BY id DESC LIMIT 1", (dag_id,)
        ).fetchone()
        if run is None:
            return {}
        rows = connection.execute(
            "SELECT task_id, duration FROM task_instance WHERE dag_id = ? AND run_id = ?", (dag_id, run[0])
        ).fetchall()
    return {task: round(duration, 2) for task, duration in rows if duration is not None}


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 2) if values else 0.0


def _summary(runs: int, warm_up: dict, floor: list[dict], measured: dict[str, list[dict]]) -> dict:
    floor_cpu = _mean([r["cpu_seconds"] for r in floor])
    kinds = {}
    hour_cpu = hour_cpu_less_floor = 0.0
    for kind, results in measured.items():
        failed = [r for r in results if r["returncode"] != 0]
        if failed:
            print(failed[0]["output_tail"], file=sys.stderr)
            raise SystemExit(f"a measured {kind} run failed: its figures would measure a failure")
        cpu = _mean([r["cpu_seconds"] for r in results])
        kinds[kind] = {
            "runs": results,
            "wall_seconds_mean": _mean([r["wall_seconds"] for r in results]),
            "task_seconds_mean": _mean([sum(r["task_seconds"].values()) for r in results]),
            "cpu_seconds_mean": cpu,
            "spark_started_runs": sum(r["spark_started"] for r in results),
            "runs_per_idle_hour": RUNS_PER_HOUR[kind],
        }
        hour_cpu += RUNS_PER_HOUR[kind] * cpu
        hour_cpu_less_floor += RUNS_PER_HOUR[kind] * max(cpu - floor_cpu, 0.0)
    return {
        "benchmark": "idle_cost",
        "measured_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": _commit(),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
        "runs_per_dag": runs,
        "warm_up": {kind: {k: v for k, v in run.items() if k != "output_tail"} for kind, run in warm_up.items()},
        "airflow_floor": {
            "wall_seconds_mean": _mean([r["wall_seconds"] for r in floor]),
            "cpu_seconds_mean": floor_cpu,
        },
        "dags": kinds,
        "idle_hour_cpu_seconds": round(hour_cpu, 1),
        "idle_hour_cpu_seconds_less_airflow_floor": round(hour_cpu_less_floor, 1),
    }


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    return done.stdout.strip()


def _print(result: dict) -> None:
    print(f"\nidle stream, {result['runs_per_dag']} runs per DAG, commit {result['commit']}")
    floor = result["airflow_floor"]
    print(f"{'airflow floor':16} {floor['wall_seconds_mean']:7.1f} s wall {floor['cpu_seconds_mean']:7.1f} CPU-s")
    for kind, figures in result["dags"].items():
        print(
            f"{kind:16} {figures['wall_seconds_mean']:7.1f} s wall {figures['task_seconds_mean']:7.1f} s task "
            f"{figures['cpu_seconds_mean']:7.1f} CPU-s  Spark in {figures['spark_started_runs']}/{len(figures['runs'])} "
            f"runs  x{figures['runs_per_idle_hour']}/h"
        )
    print(
        f"idle hour: {result['idle_hour_cpu_seconds']:.0f} CPU-s "
        f"({result['idle_hour_cpu_seconds_less_airflow_floor']:.0f} without the dags-test floor)"
    )


if __name__ == "__main__":
    sys.exit(main())
