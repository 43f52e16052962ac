"""Quality checks of one sealed hour: 1,000,000 records over 4 partitions, on this machine.

    .venv/bin/python benchmarks/quality_checks.py [--records 1000000] [--partitions 4] [--range-records 50000]

Synthesises the hour straight into Delta tables under a temporary folder (events, and the
matching live ledger rows, one range per 50,000 records of a partition; empty late and
quarantine tables; the hour in the seals table; Spark writes them, as the persist job would), then
runs expectations.quality_run.run_quality for that hour twice, Spark-free (deltalake + pyarrow
facts, expectations.delta_lake_facts): the first run pays for GX's warm-up, the second is what a
long-lived worker pays. Every partition must come out OK with all its records,
otherwise the benchmark fails rather than report the time of a run that checked nothing.

Prints and writes benchmarks/results/quality_checks.json: wall time per run, per stage (facts
computed from the Delta tables, per check family) and per GX validation, with the machine's core count.

    .venv/bin/python benchmarks/quality_checks.py --no-hour-task [--repo CHECKOUT]

A quality run with no new hour (stall and retention only) as an Airflow task, end to end: a real
Kafka broker, the persist job run once in this process (a lake with a ledger), then `airflow
dags test tidemark_quality__telemetry` twice in a throwaway AIRFLOW_HOME (tests/harness); the
second run has no hour left to check and is the one that counts: the `check` task instance's
duration (Airflow's own start and end) and the whole `dags test` wall time. ``--repo`` runs
another checkout's dags/, plugins/ and expectations/ (e.g. a `git archive` of an older commit,
put first on PYTHONPATH). Writes benchmarks/results/quality_checks_no_hour_task.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from datetime import UTC
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


from connectors.jars import ensure_jars, shared_jars_root  # noqa: E402

HOUR_MS = 3_600_000
HOUR = "2026-11-22T01:00:00Z"
RESULTS = REPO / "benchmarks" / "results" / "quality_checks.json"
NO_HOUR_RESULTS = REPO / "benchmarks" / "results" / "quality_checks_no_hour_task.json"


class Bounds:
    def __init__(self, earliest: int, end: int):
        self.earliest, self.end = earliest, end


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--range-records", type=int, default=50_000, help="records per ledger range")
    parser.add_argument("--results", type=Path, help=f"default {RESULTS.name}, or {NO_HOUR_RESULTS.name}")
    parser.add_argument("--no-hour-task", action="store_true", help="time a no-hour quality run through Airflow")
    parser.add_argument("--repo", type=Path, default=REPO, help="with --no-hour-task: the checkout that runs")
    args = parser.parse_args()
    if args.no_hour_task:
        figures = no_hour_task(args.repo.resolve())
        _write(args.results or NO_HOUR_RESULTS, figures)
        return 0
    if args.records % (args.partitions * args.range_records):
        parser.error("--records must be a multiple of --partitions x --range-records")

    jars = shared_jars_root()
    ensure_jars(jars, ["delta"])
    os.environ.setdefault("TIDEMARK_JARS", str(jars))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from connectors.spark_session import lake_spark_session

    spark = lake_spark_session("tidemark-bench-quality")
    spark.sparkContext.setLogLevel("ERROR")
    with tempfile.TemporaryDirectory(prefix="tidemark-bench-quality-") as scratch:
        figures = run(spark, Path(scratch), args.records, args.partitions, args.range_records)
    spark.stop()
    _write(args.results or RESULTS, figures)
    return 0


def _write(path: Path, figures: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))


def no_hour_task(repo: Path) -> dict:
    """See the module: the no-hour quality run's task and DAG-run times through Airflow."""
    import subprocess
    from datetime import datetime

    sys.path[:0] = [str(repo), str(repo / "tests"), str(repo / "plugins")]
    from harness.airflow_process import airflow_rows, dags_test
    from harness.persist_job import produce, run_persist, telemetry_value, write_stream_config
    from stack.environment import embedded_environment
    from stack.kafka_broker import KafkaBroker
    from stack.ports import free_port

    jars = shared_jars_root()
    ensure_jars(jars, ["kafka", "delta"])
    os.environ.update(TIDEMARK_JARS=str(jars), PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    dag_id = "tidemark_quality__telemetry"
    with tempfile.TemporaryDirectory(prefix="tidemark-bench-no-hour-") as folder:
        scratch = Path(folder)
        broker = KafkaBroker(state_dir=scratch / "kafka", jars_dir=jars, port=free_port(consecutive=2))
        broker.start()
        try:
            broker.create_topic("no_hour", 3)
            start_ms = int(time.time() * 1000) - 3 * HOUR_MS  # one record a minute per partition since
            produce(
                broker.bootstrap,
                "no_hour",
                [
                    (p, telemetry_value(f"scooter-{p}", start_ms + i * 60_000), start_ms + i * 60_000)
                    for i in range(170)
                    for p in range(3)
                ],
            )
            conf = write_stream_config(scratch, broker.bootstrap, "no_hour", 3)
            run_persist(conf, "--mode", "available_now", log=scratch / "persist.log")
            home = scratch / "home"
            overrides = {
                "TIDEMARK_HOME": str(home),
                "TIDEMARK_JARS": str(jars),
                "AIRFLOW_HOME": str(home / "airflow"),
                "TIDEMARK_LAKE_ROOT": str(home / "lake"),
                "TIDEMARK_CHECKPOINT_ROOT": str(home / "checkpoints"),
            }
            base = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "TIDEMARK"))}
            environment = {
                **base,
                **overrides,
                **embedded_environment(repo, {**base, **overrides}),
                "PYTHONPATH": os.pathsep.join([str(repo), str(repo / "plugins")]),
                "TIDEMARK_CONF": str(conf),
                "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
            }
            migrate = subprocess.run(
                [sys.executable, "-m", "airflow", "db", "migrate"], env=environment, capture_output=True, text=True
            )
            if migrate.returncode:
                raise SystemExit(f"airflow db migrate failed: {migrate.stderr[-3000:]}")
            runs = []
            for attempt in ("first", "no_hour"):
                started = time.monotonic()
                run = dags_test(environment, dag_id)
                wall = time.monotonic() - started
                _, begun, ended, state = next(
                    row
                    for row in airflow_rows(
                        environment,
                        "SELECT task_id, start_date, end_date, state FROM task_instance "
                        "WHERE dag_id = ? AND task_id = 'check' ORDER BY start_date DESC",
                        dag_id,
                    )
                )
                if run.returncode or state != "success":
                    raise SystemExit(f"the quality DAG run failed ({state}):\n{run.output[-4000:]}")
                runs.append(
                    {
                        "run": attempt,
                        "check_task_seconds": round(
                            (datetime.fromisoformat(ended) - datetime.fromisoformat(begun)).total_seconds(), 2
                        ),
                        "dags_test_wall_seconds": round(wall, 2),
                        "spark_submit": "spark-submit" in run.output,
                    }
                )
            summaries = sorted((home / "reports" / "telemetry" / "runs").glob("*/summary.json"), key=os.path.getmtime)
            last = json.loads(summaries[-1].read_text())
            if last["hours"] or [c["name"] for c in last["checks"] if c["ran"]] != ["retention", "stall"]:
                raise SystemExit(f"the measured run was not a no-hour run: {last['hours']}, {last['checks']}")
        finally:
            broker.stop()
    return {
        "benchmark": "quality_checks_no_hour_task",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
        "checkout": str(repo),
        "runs": runs,
        "note": "check_task_seconds: the check task instance's start to end as Airflow recorded them; "
        "dags_test_wall_seconds: the whole `airflow dags test` process (Airflow's start, DAG parsing, every task)",
    }


def run(spark, scratch: Path, records: int, partitions: int, range_records: int) -> dict:
    from expectations.delta_lake_facts import DeltaLakeFacts
    from expectations.quality_run import run_quality
    from tidemark.event_time_text import parse_event_time
    from tidemark.stream_config import load_stream

    hour_ms = parse_event_time(HOUR)
    now_ms = hour_ms + 2 * HOUR_MS
    stream = load_stream(_write_config(scratch), "telemetry")
    per_partition = records // partitions

    started = time.monotonic()
    _synthesise(spark, stream, hour_ms, now_ms, records, partitions, range_records)
    synthesis_seconds = time.monotonic() - started

    bounds = {p: Bounds(0, per_partition) for p in range(partitions)}
    runs = []
    for attempt in ("cold", "warm"):
        started = time.monotonic()
        result = run_quality(
            DeltaLakeFacts(stream),
            stream,
            [hour_ms],
            bounds,
            now_ms,
            scratch / "reports",
            scratch / "gx",
            f"bench-{attempt}",
        )
        wall = time.monotonic() - started
        outcome = [(p.partition, p.status.value, p.records) for p in result.partitions]
        if outcome != [(p, "OK", per_partition) for p in range(partitions)] or not result.success:
            raise SystemExit(
                f"the benchmark's hour did not check clean: {outcome}, checks {result.to_json()['checks']}"
            )
        runs.append(
            {
                "run": attempt,
                "wall_seconds": round(wall, 2),
                "stage_seconds": {stage: round(seconds, 2) for stage, seconds in result.stage_seconds},
                "checks": {
                    c.name: {
                        "facts_seconds": round(c.facts_seconds, 2),
                        "gx_seconds": round(c.gx_seconds, 2),
                        "rows": c.rows,
                    }
                    for c in result.checks
                },
                "gx_seconds_total": round(sum(c.gx_seconds for c in result.checks), 2),
                "facts_seconds_total": round(sum(seconds for _, seconds in result.stage_seconds), 2),
            }
        )
        print(f"{attempt} run: {wall:.1f} s", file=sys.stderr)
    return {
        "benchmark": "quality_checks",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
        "records": records,
        "partitions": partitions,
        "ledger_ranges": records // range_records,
        "hour": HOUR,
        "synthesis_seconds": round(synthesis_seconds, 2),
        "runs": runs,
        "note": "facts = deltalake + pyarrow over the Delta tables (no Spark: expectations.delta_lake_facts); GX = "
        "one checkpoint run per check family over the small fact frames as pandas frames, Data Docs built once per "
        "run; wall includes opening the GX project and writing the reports. Spark only synthesises the tables.",
    }


def _write_config(scratch: Path) -> Path:
    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    # Only the benchmark's stream: the others' lake roots read variables this run does not set.
    document["streams"] = {"telemetry": document["streams"]["telemetry"]}
    document["streams"]["telemetry"]["lake"] = {"root": str(scratch / "lake"), "checkpoint_root": str(scratch / "cp")}
    path = scratch / "streams.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def _synthesise(spark, stream, hour_ms, now_ms, records, partitions, range_records) -> None:
    """Events: record i goes to partition i % P at offset i // P; each partition's event times
    rise evenly across the hour. Ledger: live ranges of ``range_records`` offsets each."""
    from pyspark.sql import functions as F

    from spark_jobs.lake.tables import LakeTables
    from tidemark.table_schemas import LEDGER_COLUMNS, SEALS_COLUMNS, ddl, events_columns

    LakeTables(spark, stream).ensure()
    per_partition = records // partitions
    offset = F.floor(F.col("id") / partitions)
    event_ms = F.lit(hour_ms) + offset * F.lit(HOUR_MS) / F.lit(per_partition)
    event_time = F.timestamp_millis(F.floor(event_ms).cast("long"))
    generated = {
        "source_partition": (F.col("id") % partitions).cast("int"),
        "source_offset": offset.cast("long"),
        "log_timestamp": event_time,
        "event_time": event_time,
        "record_key": F.encode(F.concat(F.lit("device-"), (F.col("id") % 500).cast("string")), "UTF-8"),
        "record_headers": F.lit(None),
        "device_id": F.concat(F.lit("device-"), (F.col("id") % 500).cast("string")),
        "lat": F.lit(52.37),
        "lon": F.lit(4.89),
        "battery": (F.col("id") % 100).cast("int"),
        "step_id": F.floor(offset / range_records).cast("long"),
        "event_date": F.to_date(event_time),
        "event_hour": F.hour(event_time),
    }
    columns = events_columns(stream.payload)
    events = spark.range(records).select(*[generated[name].cast(sql_type).alias(name) for name, sql_type in columns])
    events.write.format("delta").mode("append").save(stream.table_path("events"))

    def at(ms):
        from datetime import datetime

        return datetime.fromtimestamp(ms / 1000, tz=UTC)

    ledger_rows = []
    ranges = per_partition // range_records
    for partition in range(partitions):
        for index in range(ranges):
            start, end = index * range_records, (index + 1) * range_records
            first_ms = hour_ms + start * HOUR_MS // per_partition
            last_ms = hour_ms + (end - 1) * HOUR_MS // per_partition
            row = {
                "stream": stream.name,
                "step_id": index,
                "source_partition": partition,
                "mode": "live",
                "start_offset": start,
                "end_offset": end,
                "log_end_offset": per_partition,
                "records": range_records,
                "quarantined": 0,
                "late": 0,
                "data_records": range_records,
                "min_event_time": at(first_ms),
                "max_event_time": at(last_ms),
                "partition_watermark": at(last_ms - 30_001),
                "global_watermark": at(last_ms - 60_000),
                "partition_status": "ACTIVE",
                "slicing": "event_time",
                "read_time": at(now_ms - (ranges - index) * 60_000),
                "held_by_open_transaction": False,
                "writer": f"tidemark:{stream.name}:live:bench",
            }
            ledger_rows.append(tuple(row.get(name) for name, _ in LEDGER_COLUMNS))
    spark.createDataFrame(ledger_rows, ddl(LEDGER_COLUMNS)).write.format("delta").mode("append").save(
        stream.table_path("ledger")
    )
    seal = {
        "stream": stream.name,
        "hour": at(hour_ms),
        "sealed_at": at(now_ms - 60_000),
        "global_watermark": at(hour_ms + HOUR_MS + 600_000),
        "micro_batch_id": ranges,
    }
    spark.createDataFrame([tuple(seal[name] for name, _ in SEALS_COLUMNS)], ddl(SEALS_COLUMNS)).write.format(
        "delta"
    ).mode("append").save(stream.table_path("seals"))


if __name__ == "__main__":
    sys.exit(main())
