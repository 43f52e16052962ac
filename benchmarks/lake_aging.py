"""The lake after N days: what day N costs against day 1, with maintenance running as scheduled.

    flock /tmp/tidemark-heavy.lock .venv/bin/python benchmarks/lake_aging.py --days 30 \
        [--rate-scale 0.01] [--persist-schedule "0 * * * *"]

Builds a lake of ``--days`` simulated days through real persist runs and real maintenance runs,
in one process and one Spark session, on a Kafka broker of its own (benchmarks.scratch_environment,
the broker the test suite starts):

- **Accelerated time.** The simulation starts at a UTC midnight ``days + 2`` days before today, so
  its last hour lies a day behind the wall clock. Every record carries its simulated event time
  as its Kafka timestamp (the generator's CreateTime = event time); the topic keeps everything
  (``retention.ms = -1``). Sealing needs no clock: an hour is sealed when G passes it plus the
  allowed lateness, and G moves with the records read. A caught-up partition is IDLE at once
  (its last record is days old on the wall clock); G still moves with what each run read.
- **The demo's four profiles** (generator/profiles.py: steady, slow, heavy, bursty, one partition
  each) at ``--rate-scale`` (default 0.01: 7, 1, 180 and 18 records an hour, 206 in all, where the
  demo makes 20,521; slow is never scaled), each record's event time up to the stream's
  max_out_of_orderness behind its due time, as the generator makes them.
- **The schedules the stream declares**, walked in simulated time with croniter (as Airflow's
  timetables read them): ``persist.schedule`` from ``--persist-schedule`` (hourly by default;
  the demo runs every 5 minutes, 8,640 runs for 30 days, which two shared cores cannot do in
  the 40 minutes a benchmark may hold them) and ``maintenance.schedule`` "15 0 * * *" (daily,
  where the default is hourly). Before each persist run, the records due since the previous one
  are produced; the run is the persist job's ``main`` in this process
  (tests/harness/persist_job.run_persist). Each maintenance run is spark_jobs.maintenance.job
  .run_maintenance. Runs a few hours apart leave a sealed hour two to four files (a run writes
  each hour it read, and the next run the records that arrived up to max_out_of_orderness
  early), so the stream declares ``maintenance.compact_min_files: 2`` (default 4). VACUUM works
  on the wall clock: ``vacuum_retain`` 10m (``reader_timeout`` 5m) stands for about a week of
  simulated time at about a minute per simulated day; so do the GX validation results a quality
  run keeps (``quality.data_docs_keep`` 2m, about two simulated days, as the default 1d keeps a
  day of a real stream's runs: Data Docs list every result kept). Delta's log clean-up
  (``delta.logRetentionDuration``, 30 days on the wall clock) never runs within the benchmark,
  as in a real lake's first 30 days.

On day 1, day ceil(N/2) and day N, right after that day's maintenance run (00:15 of the next day),
the same measurements in the same way:

- files per sealed partition-hour of events (the Delta log, connectors.maintenance_look
  .files_per_hour): mean and max over sealed hours;
- the time to read one sealed hour (hour 12 of the day: a Spark read and count, median of 5);
- the persist look before a run (connectors.persist_look.look_before_persist; nothing new; median
  of 5), an idle persist run (the job with nothing new; median of 3);
- the sweep (expectations/quality_run.py --sweep at the simulated now; every sealed hour within the
  stream's retention of 7 days, so it grows until day 8, then stays): twice, the second counts;
- the sizes: the ledger's rows and files, every table's _delta_log (files and bytes), the
  persist job's Spark checkpoint (files);
- a quality run of the newly sealed hours: a reconciling quality run first (it checks every hour
  sealed since the previous measurement; reported, not compared), then the next scheduled
  persist run seals the next hours (one when runs are hourly, three when every three hours),
  then ``quality_run.py --hours <those> --reconcile`` (as the quality DAG runs per sealed hour)
  at the simulated now, in a child process as the DAG runs it, three times: the medians of the
  run's own time (its ``quality_run_finished`` line) and of that time without GX's start (its
  import and project) are compared; the child's whole time is shown.

Also, from every maintenance run: the files of each compacted hour before and after (its
commits' metrics) and the run's own time per day of data (daily runs: one day each). And the
median scheduled persist run of each measured day.

Prints the figures and writes benchmarks/results/lake_aging.json, with each cost on day N ÷ day 1
(the goal: at most 1.2 for every run that does not scan the whole lake). ``age_lake`` takes the
days, the rate scale and the persist schedule and returns the figures, for a short version in
the test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from connectors.jars import ensure_jars, shared_jars_root  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "lake_aging.json"
MINUTE_MS = 60_000
HOUR_MS = 3_600_000
DAY_MS = 86_400_000
TOPIC = "lake_aging"
PROFILE_ORDER = ("steady", "slow", "heavy", "bursty")  # one partition each, as the demo's
PERSIST_SCHEDULE = "0 * * * *"
MAINTENANCE_SCHEDULE = "15 0 * * *"
MAINTENANCE = {"schedule": MAINTENANCE_SCHEDULE, "compact_min_files": 2, "reader_timeout": "5m", "vacuum_retain": "10m"}
# The GX validation results a quality run keeps, on the wall clock as GX stamps them: about two
# simulated days (the default, 1d, is a day of a real stream's runs).
DATA_DOCS_KEEP = "2m"
# Runs that read a bounded part of the lake; the sweep reads every hour the log retains.
# The quality run also without GX's start (its import and project, the same every run), which
# would otherwise hide a growth of the rest.
BOUNDED_COSTS = (
    "read_one_sealed_hour_s",
    "persist_look_s",
    "idle_persist_run_s",
    "quality_one_new_hour_s",
    "quality_one_new_hour_after_gx_start_s",
)
GOAL = 1.2


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30, help="simulated days (the issue asks for 30 or more)")
    parser.add_argument(
        "--rate-scale", type=float, default=0.01, help="multiplies the demo profiles' rates (slow stays 1 an hour)"
    )
    parser.add_argument(
        "--persist-schedule", default=PERSIST_SCHEDULE, help="the stream's persist.schedule (cron, simulated UTC)"
    )
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument(
        "--keep", type=Path, help="build the lake in this (new) folder and keep it, to look into it afterwards"
    )
    args = parser.parse_args()
    if args.days < 2:
        parser.error("--days must be at least 2: day 1 is compared with day N")

    jars = shared_jars_root()
    ensure_jars(jars, ["kafka", "delta"])
    os.environ.update(TIDEMARK_JARS=str(jars), PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    from benchmarks.scratch_environment import scratch_broker
    from connectors.spark_session import lake_spark_session

    started = time.monotonic()
    spark = lake_spark_session("tidemark-bench-lake-aging")
    spark.sparkContext.setLogLevel("ERROR")
    with contextlib.ExitStack() as cleanup:
        if args.keep:
            args.keep.mkdir(parents=True)
            scratch = args.keep
        else:
            scratch = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="tidemark-bench-aging-")))
        with scratch_broker(scratch, jars) as broker:
            figures = age_lake(spark, broker, scratch, args.days, args.rate_scale, args.persist_schedule, print)
    spark.stop()
    figures["wall_s"] = round(time.monotonic() - started, 1)
    figures["command"] = (
        f"benchmarks/lake_aging.py --days {args.days} --rate-scale {args.rate_scale} "
        f"--persist-schedule '{args.persist_schedule}'"
    )
    figures["commit"] = _commit()
    figures["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version(), "os": platform.platform()}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(figures, indent=2) + "\n")
    _print(figures)
    print(f"written: {args.results}")
    return 0


# ---- the plan: pure, no Spark, no Kafka ----------------------------------------------------------


def measured_days(days: int) -> list[int]:
    """Day 1, day ceil(N/2) and day N (each once)."""
    return sorted({1, (days + 1) // 2, days})


def firings(cron: str, start_ms: int, end_ms: int) -> list[int]:
    """The times (ms, UTC) ``cron`` fires in (start_ms, end_ms], as croniter reads it."""
    from croniter import croniter

    schedule = croniter(cron, datetime.fromtimestamp(start_ms / 1000, UTC))
    times = []
    while (moment := int(schedule.get_next(datetime).timestamp() * 1000)) <= end_ms:
        times.append(moment)
    return times


def timeline(start_ms: int, days: int, persist_schedule: str = PERSIST_SCHEDULE) -> list[tuple[int, str]]:
    """Every scheduled run from the simulation's start to the first persist run after the last
    day's maintenance run (the one whose newly sealed hours the last quality run checks): (ms,
    "persist" or "maintenance"), in time order; a persist run before a maintenance run at the same
    minute. Runs before the first persist run are left out (there is no lake to maintain)."""
    last_maintenance = firings(MAINTENANCE_SCHEDULE, start_ms + days * DAY_MS - 1, start_ms + (days + 1) * DAY_MS)[0]
    end_ms = firings(persist_schedule, last_maintenance, last_maintenance + DAY_MS)[0]
    runs = [(t, "persist") for t in firings(persist_schedule, start_ms, end_ms)]
    first = runs[0][0]
    runs += [(t, "maintenance") for t in firings(MAINTENANCE_SCHEDULE, start_ms, end_ms) if t > first]
    return sorted(runs, key=lambda run: (run[0], run[1] != "persist"))


def ratio(day_n: float | int | None, day_1: float | int | None) -> float | None:
    """day N ÷ day 1, rounded to 2 decimals; None when day 1 is 0 or either is missing."""
    if day_n is None or not day_1:
        return None
    return round(day_n / day_1, 2)


def ratios(first: dict, last: dict) -> dict:
    """Each figure of the last measured day over the first's, and the goal's verdict for the runs
    that read a bounded part of the lake."""
    out = {}
    for key, value in first.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = ratio(last.get(key), value)
    out["goal"] = {
        "limit": GOAL,
        "runs": list(BOUNDED_COSTS),
        "result": "PASS" if all((out.get(k) or 0) <= GOAL for k in BOUNDED_COSTS) else "FAIL",
        "over": [k for k in BOUNDED_COSTS if (out.get(k) or 0) > GOAL],
    }
    return out


# ---- the run --------------------------------------------------------------------------------------


def age_lake(
    spark,
    broker,
    scratch: Path,
    days: int,
    rate_scale: float,
    persist_schedule: str = PERSIST_SCHEDULE,
    progress: Callable = print,
    timed: bool = True,
) -> dict:
    """Build ``days`` simulated days of the demo stream at ``rate_scale``, persisted on
    ``persist_schedule``, and return the figures (see the module). ``broker``: a
    stack.kafka_broker.KafkaBroker that runs; ``scratch``: a folder of the run's own (lake,
    checkpoints, reports, logs). ``timed=False`` (the suite's short version) measures what is
    counted, not timed: each cost once instead of its median, no idle persist runs, no sweeps
    and no catch-up quality run."""
    from connectors.maintenance_look import sealed_hours
    from spark_jobs.maintenance.job import run_maintenance
    from tidemark.stream_config import load_stream

    broker.create_topic(TOPIC, len(PROFILE_ORDER), {"retention.ms": "-1"})
    conf = _write_config(scratch, broker.bootstrap, persist_schedule)
    stream = load_stream(conf, "telemetry")
    today = int(time.time() * 1000) // DAY_MS * DAY_MS
    start_ms = today - (days + 2) * DAY_MS
    producer = _Producer(broker.bootstrap, stream, rate_scale)
    measure_at = {start_ms + d * DAY_MS + 15 * MINUTE_MS: d for d in measured_days(days)}
    persist_runs: dict[int, list[float]] = {}
    maintenance_runs, measurements = [], {}
    produced_until, began, new_hours_of = start_ms, time.monotonic(), None
    for moment, kind in timeline(start_ms, days, persist_schedule):
        if kind == "persist":
            day = (moment - start_ms - 1) // DAY_MS + 1  # the day of the hour of records it reads
            producer.produce(produced_until, moment)
            produced_until = moment
            sealed_before = set(sealed_hours(stream)) if new_hours_of else set()
            t0 = time.monotonic()
            _persist(conf, scratch)
            persist_runs.setdefault(day, []).append(time.monotonic() - t0)
            if new_hours_of:  # the first run after a measurement: the quality run of what it sealed
                new = sorted(set(sealed_hours(stream)) - sealed_before)
                quality = _quality_new_hours(conf, scratch, new_hours_of, new, moment, timed)
                measurements[new_hours_of].update(quality)
                progress(f"day {new_hours_of}: {json.dumps(measurements[new_hours_of])}")
                new_hours_of = None
        else:
            day = (moment - start_ms - HOUR_MS) // DAY_MS + 1  # 00:15: the day that just ended
            result = run_maintenance(spark, stream)
            maintenance_runs.append(_maintenance_figures(result, day))
            progress(
                f"simulated day {day}/{days} done, {time.monotonic() - began:.0f} s so far; "
                f"maintenance: {result.summary()}"
            )
            if moment in measure_at:
                d = measure_at[moment]
                measurements[d] = _measure(spark, conf, scratch, stream, d, start_ms, moment, timed)
                new_hours_of = d
    for d, figures in measurements.items():
        figures["scheduled_persist_run_s"] = round(statistics.median(persist_runs[d]), 3) if d in persist_runs else None
    return _figures(
        days, rate_scale, persist_schedule, start_ms, producer, measurements, maintenance_runs, persist_runs
    )


class _Producer:
    """The demo profiles' records, one partition each, produced window by window (ms, UTC) with
    their event time as the Kafka timestamp; counts what it produced per partition."""

    def __init__(self, bootstrap: str, stream, rate_scale: float):
        from confluent_kafka import Producer

        from generator.value_encoders import value_encoder

        self._producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True})
        self._encode = value_encoder(stream, TOPIC)
        self._disorder_ms = stream.event_time.max_out_of_orderness_ms
        self.rate_scale = rate_scale
        self.counts = dict.fromkeys(range(len(PROFILE_ORDER)), 0)

    def produce(self, start_ms: int, end_ms: int) -> None:
        from generator.production_plan import ProductionPlan
        from generator.profiles import PROFILES

        plan = ProductionPlan(
            tuple(PROFILES[name] for name in PROFILE_ORDER),
            start_ms,
            end_ms,
            seed=start_ms // HOUR_MS,  # a different disorder every hour, the same on every run
            max_disorder_ms=self._disorder_ms,
            rate_scale=self.rate_scale,
        )
        for record in plan.records():
            payload = record.payload
            self._producer.produce(
                TOPIC,
                self._encode(payload),
                payload["device_id"].encode(),
                partition=record.partition,
                timestamp=record.event_time_ms,
            )
            self.counts[record.partition] += 1
        if self._producer.flush(60):
            raise SystemExit("records were not delivered to the benchmark's broker within 60 s")


def _write_config(scratch: Path, bootstrap: str, persist_schedule: str) -> Path:
    from harness.persist_job import write_stream_config

    path = write_stream_config(scratch, bootstrap, TOPIC, len(PROFILE_ORDER), schedule=persist_schedule)
    document = yaml.safe_load(path.read_text())
    stream = document["streams"]["telemetry"]
    stream["maintenance"] = dict(MAINTENANCE)
    stream.setdefault("quality", {})["data_docs_keep"] = DATA_DOCS_KEEP
    stream.pop("alerts", None)
    path.write_text(yaml.safe_dump(document))
    return path


def _persist(conf: Path, scratch: Path) -> None:
    from harness.persist_job import run_persist

    log = scratch / "persist.log"
    run_persist(conf, "--mode", "available_now", log=log)
    if log.stat().st_size > 50_000_000:  # the lines are not measured; keep the scratch folder small
        log.write_text("")


def _measure(spark, conf: Path, scratch: Path, stream, day: int, start_ms: int, now_ms: int, timed: bool) -> dict:
    """The lake as it stands after ``day`` and its maintenance run (see the module); untimed, the
    counts only."""
    from connectors.maintenance_look import files_per_hour, sealed_hours
    from connectors.persist_look import look_before_persist

    sealed = sealed_hours(stream)
    files = files_per_hour(stream.table_path("events"))
    sealed_files = [files[h] for h in sealed if h in files]
    hour = start_ms + (day - 1) * DAY_MS + 12 * HOUR_MS
    if hour not in sealed:
        raise SystemExit(f"day {day}: hour 12 is not sealed; the lake did not age as planned")
    day_text = datetime.fromtimestamp(hour / 1000, UTC).date().isoformat()
    events = stream.table_path("events")

    def read_hour() -> int:
        return spark.read.format("delta").load(events).where(f"event_date = '{day_text}' AND event_hour = 12").count()

    rows_in_hour, read_s = _median_of(5 if timed else 1, read_hour)
    look, look_s = _median_of(5 if timed else 1, lambda: look_before_persist(stream))
    counted = {
        "simulated_now": _iso(now_ms),
        "sealed_hours": len(sealed),
        "files_per_sealed_hour_mean": round(statistics.mean(sealed_files), 2),
        "files_per_sealed_hour_max": max(sealed_files),
        "events_files": sum(files.values()),
        "read_one_sealed_hour_rows": rows_in_hour,
        "read_one_sealed_hour_files": files[hour],
        "persist_look_nothing_new": look.nothing_new,
        "persist_look_reason": look.reason,
        **_sizes(stream),
    }
    if not timed:
        return counted
    _, idle_s = _median_of(3, lambda: _persist(conf, scratch))
    sweeps = [_sweep(conf, scratch, day, attempt, now_ms) for attempt in (1, 2)]
    t0 = time.monotonic()
    primed = _quality(conf, scratch, f"day{day:02d}-catch-up", now_ms)
    primed_s = time.monotonic() - t0
    return {
        **counted,
        "read_one_sealed_hour_s": read_s,
        "persist_look_s": look_s,
        "idle_persist_run_s": idle_s,
        "sweep_s": sweeps[1]["seconds"],
        "sweep_first_s": sweeps[0]["seconds"],
        "sweep_hours": sweeps[1]["hours"],
        "sweep_statuses": sweeps[1]["statuses"],
        "quality_catch_up_s": round(primed_s, 2),
        "quality_catch_up_hours": len(primed["hours"]),
        "quality_catch_up_statuses": _statuses(primed),
        **_sizes(stream),  # after the idle runs and the sweeps, as the sizes of that day's lake
    }


def _quality_new_hours(conf: Path, scratch: Path, day: int, hours: list[int], now_ms: int, timed: bool) -> dict:
    """The quality run of the hours the persist run at ``now_ms`` sealed (one, when runs are
    hourly). Timed, it runs as the quality DAG runs it, ``quality_run.py`` in a child process of its
    own, three times (the same hours; the median counts): measured in the benchmark's own process,
    beside 30 days of its Spark driver, the run grew with that process, not with the lake. The
    compared figure is the run's own time (its ``quality_run_finished`` line); the child's whole
    time, Python start-up and imports included, is reported beside it."""
    if not hours:
        raise SystemExit(
            f"day {day}: the persist run at {_iso(now_ms)} sealed no hour; the lake did not age as planned"
        )
    own, whole, started, result = [], [], [], {}
    for attempt in range(1, 4 if timed else 2):
        run_name = f"day{day:02d}-new-hour-{attempt}"
        t0 = time.monotonic()
        result = _quality(conf, scratch, run_name, now_ms, hours=hours, child=timed)
        whole.append(time.monotonic() - t0)
        own.append(_finished(scratch, run_name))
        started.append(result["stage_seconds"].get("gx_start", 0.0))
    return {
        "quality_one_new_hour_s": round(statistics.median(line["seconds"] for line in own), 2),
        "quality_one_new_hour_after_gx_start_s": round(
            statistics.median(line["seconds"] - gx for line, gx in zip(own, started, strict=True)), 2
        ),
        "quality_one_new_hour_gx_start_s": round(statistics.median(started), 2),
        "quality_one_new_hour_process_s": round(statistics.median(whole), 2),
        "quality_one_new_hour_files_read": own[-1].get("files_read"),
        "quality_one_new_hour_hours": list(result["hours"]),
        "quality_one_new_hour_statuses": _statuses(result),
        "quality_one_new_hour_success": result["success"],
    }


def _finished(scratch: Path, run_name: str) -> dict:
    """The ``quality_run_finished`` line of ``run_name`` in the runs' log."""
    for line in map(json.loads, reversed(_json_lines(scratch / "quality.log"))):
        if line.get("event") == "quality_run_finished" and line.get("run_name") == run_name:
            return line
    raise SystemExit(f"quality run {run_name} logged no quality_run_finished line: see {scratch / 'quality.log'}")


def _quality(
    conf: Path, scratch: Path, run_name: str, now_ms: int, hours: list[int] | None = None, child: bool = False
) -> dict:
    """One reconciling quality run (expectations/quality_run.py), in this process, or ``child``
    in a Python process of its own as the quality DAG runs it."""
    from expectations.quality_run import main
    from harness.persist_job import run_in_process

    reports, result = scratch / "reports", scratch / f"quality-{run_name}.json"
    argv = ["--stream", "telemetry", "--conf", str(conf), "--report-dir", str(reports)]
    argv += ["--gx-dir", str(reports / "telemetry" / "gx"), "--run-name", run_name, "--result", str(result)]
    argv += ["--now-ms", str(now_ms), "--reconcile"]
    if hours:
        argv += ["--hours", ",".join(_iso(h) for h in hours)]
    if child:
        with (scratch / "quality.log").open("a") as log:
            command = [sys.executable, str(REPO / "expectations" / "quality_run.py"), *argv]
            code = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
    else:
        code = run_in_process(main, argv, scratch / "quality.log")
    if code != 0:
        raise SystemExit(f"quality run {run_name} exited {code}: see {scratch / 'quality.log'}")
    return json.loads(result.read_text())


def _json_lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.startswith("{")]


def _sweep(conf: Path, scratch: Path, day: int, attempt: int, now_ms: int) -> dict:
    """The sweep (quality_run.py --sweep) at the simulated now, in this session."""
    from expectations.quality_run import main
    from harness.persist_job import run_in_process

    reports, result = scratch / "reports", scratch / f"sweep-{day}-{attempt}.json"
    argv = ["--stream", "telemetry", "--conf", str(conf), "--report-dir", str(reports), "--sweep"]
    argv += ["--gx-dir", str(reports / "telemetry" / "gx"), "--run-name", f"day{day:02d}-sweep-{attempt}"]
    argv += ["--result", str(result), "--now-ms", str(now_ms)]
    t0 = time.monotonic()
    code = run_in_process(main, argv, scratch / "quality.log")
    seconds = time.monotonic() - t0
    if code != 0:
        raise SystemExit(f"sweep of day {day} exited {code}: see {scratch / 'quality.log'}")
    swept = json.loads(result.read_text())
    return {"seconds": round(seconds, 2), "hours": len(swept["hours"]), "statuses": _statuses(swept)}


def _statuses(result: dict) -> dict[str, str]:
    return {str(p["partition"]): p["status"] for p in result["partitions"]}


def _sizes(stream) -> dict:
    """The ledger's rows and files, the seals' files, every table's Delta log (files, bytes), the persist checkpoint's files."""
    import pyarrow as pa

    from connectors.lake_storage import open_delta_table
    from spark_jobs.lake.tables import TABLES

    ledger = pa.table(open_delta_table(stream.table_path("ledger")).get_add_actions(flatten=True))
    logs = {}
    for table in TABLES:
        folder = Path(stream.table_path(table)) / "_delta_log"
        entries = [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []
        logs[table] = {"files": len(entries), "bytes": sum(p.stat().st_size for p in entries)}
    checkpoint = Path(stream.checkpoint_path("persist"))
    return {
        "ledger_rows": int(sum(ledger.column("num_records").to_pylist())),
        "ledger_files": ledger.num_rows,
        "seals_files": len(open_delta_table(stream.table_path("seals")).file_uris()),
        "delta_log_files": sum(v["files"] for v in logs.values()),
        "delta_log_bytes": sum(v["bytes"] for v in logs.values()),
        "delta_log_per_table": logs,
        "persist_checkpoint_files": sum(1 for p in checkpoint.rglob("*") if p.is_file()),
    }


def _maintenance_figures(result, day: int) -> dict:
    compacted = [d for d in result.compacted if not d.yielded]
    return {
        "after_day": day,
        "seconds": result.seconds,
        "hours_compacted": sum(len(d.hours) for d in compacted),
        "hours_yielded": sum(len(d.hours) for d in result.compacted if d.yielded),
        "files_before": sum(d.files_removed for d in compacted),
        "files_after": sum(d.files_added for d in compacted),
        "vacuum_files_deleted": sum(v.files_deleted for v in result.vacuumed),
        # The ledger and the seals, compacted whole: {table: [files before, after]}.
        "tables_compacted": {t.table: [t.files_removed, t.files_added] for t in result.tables if not t.yielded},
    }


def _figures(days, rate_scale, persist_schedule, start_ms, producer, measurements, maintenance_runs, persist_runs):
    from generator.profiles import PROFILES

    compacted = [run for run in maintenance_runs if run["hours_compacted"]]
    hours = sum(run["hours_compacted"] for run in compacted)
    first, last = measurements[min(measurements)], measurements[max(measurements)]
    return {
        "benchmark": "lake_aging",
        "days": days,
        "measured_days": sorted(measurements),
        "simulated_start": _iso(start_ms),
        "rate_scale": rate_scale,
        "records_per_hour_per_partition": {name: PROFILES[name].records_per_hour(rate_scale) for name in PROFILE_ORDER},
        "demo_records_per_hour": sum(PROFILES[name].records_per_hour() for name in PROFILE_ORDER),
        "records_produced": sum(producer.counts.values()),
        "schedules": {"persist": persist_schedule, "maintenance": MAINTENANCE_SCHEDULE},
        "maintenance_settings": MAINTENANCE,
        "persist_runs": sum(len(runs) for runs in persist_runs.values()),
        "persist_run_s_mean": round(statistics.mean(t for runs in persist_runs.values() for t in runs), 3),
        "measurements": {f"day_{d}": figures for d, figures in sorted(measurements.items())},
        "day_n_over_day_1": ratios(first, last),
        "compaction": {
            "hours_compacted": hours,
            "files_per_hour_before": round(sum(r["files_before"] for r in compacted) / hours, 2) if hours else None,
            "files_per_hour_after": round(sum(r["files_after"] for r in compacted) / hours, 2) if hours else None,
        },
        "maintenance": {
            "runs": len(maintenance_runs),
            "seconds_per_day_of_data_mean": round(statistics.mean(r["seconds"] for r in maintenance_runs), 2),
            "seconds_per_day_of_data_max": max(r["seconds"] for r in maintenance_runs),
            "per_run": maintenance_runs,
        },
        "note": "wall seconds in one Spark session (local[*]) and one process; records at --rate-scale of the "
        "demo's rates, hourly persist runs and daily maintenance in simulated time (see the module docstring)",
    }


def _median_of(times: int, action: Callable) -> tuple[object, float]:
    """(the last answer, the median wall seconds of ``times`` calls)."""
    seconds, answer = [], None
    for _ in range(times):
        t0 = time.monotonic()
        answer = action()
        seconds.append(time.monotonic() - t0)
    return answer, round(statistics.median(seconds), 3)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    return done.stdout.strip()


def _print(figures: dict) -> None:
    print(f"\nlake aging: {figures['days']} simulated days, rate scale {figures['rate_scale']}")
    days = figures["measured_days"]
    rows = [
        "files_per_sealed_hour_mean",
        "read_one_sealed_hour_s",
        "persist_look_s",
        "idle_persist_run_s",
        "quality_one_new_hour_s",
        "quality_one_new_hour_after_gx_start_s",
        "quality_one_new_hour_gx_start_s",
        "quality_one_new_hour_process_s",
        "scheduled_persist_run_s",
        "sweep_s",
        "sweep_hours",
        "ledger_rows",
        "ledger_files",
        "delta_log_files",
        "delta_log_bytes",
        "persist_checkpoint_files",
    ]
    print(f"{'':28}" + "".join(f"{'day ' + str(d):>12}" for d in days) + f"{'N/1':>8}")
    for key in rows:
        values = [figures["measurements"][f"day_{d}"].get(key) for d in days]
        print(f"{key:28}" + "".join(f"{v!s:>12}" for v in values) + f"{figures['day_n_over_day_1'].get(key)!s:>8}")
    print(f"goal <= {GOAL}: {figures['day_n_over_day_1']['goal']}")
    print(f"compaction: {figures['compaction']}")
    maintenance = figures["maintenance"]
    print(
        f"maintenance: {maintenance['runs']} runs, {maintenance['seconds_per_day_of_data_mean']} s per day of data "
        f"(max {maintenance['seconds_per_day_of_data_max']})"
    )


if __name__ == "__main__":
    sys.exit(main())
