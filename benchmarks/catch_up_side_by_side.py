"""Catch-up side by side: tidemark's persist job against Spark's own Kafka source and two ceilings.

    .venv/bin/python benchmarks/catch_up_side_by_side.py [--scenarios uniform,skewed,sparse,memory,continuous,partitions]
        [--records 2000000] [--max-records-per-batch 200000] [--latency-minutes 10] [--results DIR]
        [--scratch DIR] [--partition-records 5120] [--planning-partitions 1800]

Starts its own broker (temporary state, free loopback port). Every scenario produces its own
topic with the data generator, then runs jobs on it one after the other, never two Spark jobs at
once, each with its own lake and checkpoints and the same row budget per batch:

    (a) tidemark, aligned (the stream's configuration): spark_jobs/persist/job.py --mode available_now
    (b) Spark's built-in Kafka source -> from_json -> the same events layout in Delta, foreachBatch
        with idempotent appends, trigger availableNow, no watermark (spark_kafka_delta.py)
    (c) read ceiling: confluent-kafka alone reads the topic into Arrow arrays (read_ceiling.py)
    (d) write ceiling: the decoded rows, cached in memory, appended to Delta in chunks of the
        budget (write_ceiling.py)

(a) and (b) are timed as whole processes (JVM start included), peak RSS of their process trees
sampled every 0.5 s; (c) and (d) report their timed part only (no process or JVM start), so
min(c, d) is the highest rate either could reach here. Driver heap: every Spark run gets the same,
TIDEMARK_DRIVER_MEMORY when set, else the heap tidemark sizes to the row budget
(tidemark.batch_memory; recorded as options.driver_memory).

Scenarios (records/s = records / seconds; ratios only between runs that all succeeded):

    uniform     --records on 4 heavy partitions (ceil(records / 72,000) hours): a, b, c, d.
                Ratios a/b and a/min(c,d) of records/s.
    skewed      the 6-hour slow,heavy,heavy,heavy backlog of `make bench-alignment` (scale 1): a, b.
                (b) counts only the rows Spark's global watermark (allowed lateness of the stream)
                would have kept, replayed over its batches; (a) counts persisted + late (tidemark
                keeps late rows in its late table). Ratio a/b of kept records/s.
    sparse      40,000 records over 7 days of event time vs the same count over 1 hour, 4 heavy
                partitions (--rate-scale), each its own topic: a only. Target: wall time
                sparse / dense <= 2.0.
    memory      (a) on a backlog a quarter of uniform's (the same rate, a quarter of the hours) vs
                (a) on uniform's: target peak RSS 4x / 1x <= 1.1; and uniform's (a) vs (b): target
                peak RSS a / b <= 1.0. Uses the uniform scenario's runs (runs them if not selected).
    continuous  the persist job in continuous mode on a fresh topic while the live generator writes
                at the demo's rates (profiles steady,slow,heavy,bursty) for --latency-minutes;
                latency from log timestamp to visible in the events table (continuous_latency.py).
                Target: p99 <= persist.trigger_interval + 10 s.
    partitions  the same --partition-records over the same hour on 4, 64 and 256 partitions: (a) on
                each, (b) on 256; and the source's planner alone at --planning-partitions
                (benchmarks/partition_scaling.py). Targets: wall time a 256p / a 4p <= 1.3,
                a 256p / b 256p <= 1.0, the first batch planned in <= 2 s.

Writes DIR/catch_up_side_by_side.json and .md (default DIR: benchmarks/results; a run of some
scenarios only writes DIR/catch_up_side_by_side-<scenarios>.json and .md), and prints the
tables. A run that fails is recorded as {"failed": reason and the last lines of its log}, the
ratios that need it say "no ratio: <run> failed", and the other runs go on; the exit code is 1
when any run failed, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.catch_up_figures import (  # noqa: E402
    failed,
    ratio,
    records_per_second,
    replay_plain_watermark,
    target,
    totals_per_partition,
    watermarks_from_maxima,
)
from benchmarks.catch_up_report import render_markdown  # noqa: E402
from benchmarks.partition_scaling import partitions_scenario  # noqa: E402
from benchmarks.process_memory import PeakMemory, wait_sampling_peak_memory  # noqa: E402
from benchmarks.scratch_environment import scratch_broker, scratch_environment  # noqa: E402
from tidemark.event_time_text import format_optional_event_time  # noqa: E402

STREAM = "telemetry"
PARTITIONS = 4  # the default of --partitions
HEAVY_RECORDS_PER_HOUR = 18_000  # generator/profiles.py, per partition
SKEWED_PROFILES = ("slow", "heavy", "heavy", "heavy")
SKEWED_HOURS = 6
SPARSE_RECORDS = 40_000
SPARSE_HOURS = 7 * 24
DEMO_PROFILES = ("steady", "slow", "heavy", "bursty")  # stack/demo.py
SCENARIOS = ("uniform", "skewed", "sparse", "memory", "continuous", "partitions")
RUN_TIMEOUT_S = 3600  # a run that hangs fails instead of stalling the whole benchmark
RESULTS_DIR = REPO / "benchmarks" / "results"
RESULTS_NAME = "catch_up_side_by_side"


def _sized_driver_memory(max_records_per_batch: int) -> str:
    """The driver heap tidemark's persist job sizes for this budget on the shipped stream."""
    from tidemark.batch_memory import driver_memory_mib
    from tidemark.stream_config import load_stream

    environ = {"TIDEMARK_LAKE_ROOT": "/unused", "TIDEMARK_CHECKPOINT_ROOT": "/unused"}
    stream = load_stream(REPO / "conf" / "streams.yaml", "telemetry", environ)
    return f"{driver_memory_mib(max_records_per_batch, stream.payload)}m"


def main() -> int:
    args = parse_args(sys.argv[1:])
    from connectors.jars import ensure_jars, shared_jars_root

    jars = shared_jars_root()
    ensure_jars(jars, ["kafka", "delta", "spark-kafka"])
    scenarios: dict[str, dict] = {}
    with _scratch_folder(args.scratch) as scratch, scratch_broker(scratch, jars) as broker:
        env = scratch_environment(broker.bootstrap, scratch, jars)
        # The same driver heap for every Spark run: the one tidemark sizes to the row budget.
        env.setdefault("TIDEMARK_DRIVER_MEMORY", _sized_driver_memory(args.max_records_per_batch))
        bench = Bench(broker.bootstrap, broker.create_topic, scratch, env, args)
        for name in args.scenarios:
            print(f"scenario {name} ...", file=sys.stderr, flush=True)
            started = time.monotonic()
            try:
                scenarios[name] = SCENARIO_RUNNERS[name](bench)
            except ScenarioFailed as error:
                scenarios[name] = {"failed": str(error)}
            except Exception:  # noqa: BLE001 - a fault in one scenario must not lose the others' figures
                scenarios[name] = {"failed": traceback.format_exc()[-3000:]}
            scenarios[name]["scenario_seconds"] = round(time.monotonic() - started, 1)
            print(f"  {name} done in {scenarios[name]['scenario_seconds']} s", file=sys.stderr, flush=True)

    report = {
        "benchmark": RESULTS_NAME,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join([".venv/bin/python benchmarks/catch_up_side_by_side.py", *sys.argv[1:]]),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "options": {
            "records": args.records,
            "partitions": args.partitions,
            "max_records_per_batch": args.max_records_per_batch,
            "latency_minutes": args.latency_minutes,
            "partition_records": args.partition_records,
            "planning_partitions": args.planning_partitions,
            "scenarios": args.scenarios,
            "driver_memory": os.environ.get("TIDEMARK_DRIVER_MEMORY")
            or _sized_driver_memory(args.max_records_per_batch),
        },
        "scenarios": scenarios,
        "failed": failures(scenarios),
    }
    args.results.mkdir(parents=True, exist_ok=True)
    name = results_name(args.scenarios, args.partitions)
    (args.results / f"{name}.json").write_text(json.dumps(report, indent=2) + "\n")
    markdown = render_markdown(report)
    (args.results / f"{name}.md").write_text(markdown)
    print(markdown)
    print(f"written to {args.results / name}.json and .md")
    return 1 if report["failed"] else 0


def results_name(scenarios: list[str], partitions: int = PARTITIONS) -> str:
    """The results file's name: a run of some scenarios only, or on other than 4 partitions, is
    written beside the full run's file (``catch_up_side_by_side-partitions.json``,
    ``catch_up_side_by_side-uniform-16p.json``), never over it, so that each file's figures come
    from one run on one machine."""
    parts = [] if set(scenarios) == set(SCENARIOS) else list(scenarios)
    if partitions != PARTITIONS:
        parts.append(f"{partitions}p")
    return "-".join([RESULTS_NAME, *parts])


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The options, checked before anything starts; a bad one exits 2 naming it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scenarios",
        default=",".join(SCENARIOS),
        help=f"comma-separated subset of {','.join(SCENARIOS)} (default: all)",
    )
    parser.add_argument("--records", type=_positive_int, default=2_000_000, help="uniform backlog (default 2000000)")
    parser.add_argument(
        "--partitions",
        type=_positive_int,
        default=PARTITIONS,
        help=f"partitions of the backlogs' topics (default {PARTITIONS}; the skewed profiles repeat over them)",
    )
    parser.add_argument(
        "--max-records-per-batch",
        type=_positive_int,
        default=200_000,
        help="row budget of a batch, all runs (default 200000)",
    )
    parser.add_argument(
        "--latency-minutes",
        type=_positive_float,
        default=10.0,
        help="how long the continuous producer writes (default 10)",
    )
    parser.add_argument(
        "--partition-records",
        type=_positive_int,
        default=5_120,
        help="records of the partitions scenario (default 5120)",
    )
    parser.add_argument(
        "--planning-partitions",
        type=_positive_int,
        default=1_800,
        help="partitions of the topic the planner is timed on (default 1800, the seeds' shard count)",
    )
    parser.add_argument(
        "--results", type=Path, default=RESULTS_DIR, help=f"folder for the JSON and markdown (default {RESULTS_DIR})"
    )
    parser.add_argument("--scratch", type=Path, help="keep broker state, job logs and lakes in this new folder")
    args = parser.parse_args(argv)
    args.scenarios = [name.strip() for name in args.scenarios.split(",") if name.strip()]
    unknown = [name for name in args.scenarios if name not in SCENARIOS]
    if unknown or not args.scenarios:
        parser.error(
            f"--scenarios: unknown scenario {', '.join(unknown) or '(none given)'}; choose from {', '.join(SCENARIOS)}"
        )
    if args.scratch is not None and args.scratch.exists():
        parser.error(
            f"--scratch: {args.scratch} exists; give a new folder (a second run must not read the first one's lake)"
        )
    if args.results.exists() and not args.results.is_dir():
        parser.error(f"--results: {args.results} is a file; give a folder")
    return args


def _positive_int(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


@contextlib.contextmanager
def _scratch_folder(kept: Path | None):
    if kept is None:
        with tempfile.TemporaryDirectory(prefix="tidemark-bench-catch-up-") as scratch:
            yield Path(scratch)
    else:
        kept.mkdir(parents=True)
        yield kept.resolve()


class ScenarioFailed(RuntimeError):
    """A scenario could not run at all (its backlog could not be produced)."""


class RunFailed(RuntimeError):
    """One run failed; the message says why, with the last lines of its log."""


def failures(scenarios: dict) -> list[str]:
    """'<scenario>: <reason>' and '<scenario> run <name>: <reason>' for everything that failed; a
    reason of several lines is cut to its first and last (what failed, the log's last word)."""
    found = []
    for name, scenario in scenarios.items():
        if "failed" in scenario:
            found.append(f"{name}: {_first_and_last_line(scenario['failed'])}")
        for run_name, run in scenario.get("runs", {}).items():
            if failed(run):
                found.append(f"{name} run {run_name}: {_first_and_last_line((run or {}).get('failed', 'did not run'))}")
    return found


def _first_and_last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()] or ["(no reason given)"]
    return lines[0] if len(lines) == 1 else f"{lines[0]} … {lines[-1]}"


# ---------------------------------------------------------------------------------------------
# the benchmark's environment: backlogs, configurations, measured runs


class Bench:
    """Everything the scenarios share: the broker, the scratch folder, the jobs' environment, the
    options; and the uniform backlog's runs, made once and read by both uniform and memory."""

    def __init__(self, bootstrap: str, create_topic, scratch: Path, env: dict, args: argparse.Namespace):
        self.bootstrap = bootstrap
        self.create_topic = create_topic
        self.scratch = scratch
        self.env = env
        self.args = args
        self._uniform: dict | None = None
        # Topics of other than --partitions partitions, and their counts (source.partitions).
        self.topic_partitions: dict[str, int] = {}
        self.partitions = args.partitions
        self._uniform_runs: dict[str, dict] = {}

    # backlogs

    def produce_backlog(self, topic: str, profiles: tuple[str, ...], hours: float, rate_scale: float = 1.0) -> dict:
        """``hours`` simulated hours ending an hour ago on the hour (no record ahead of the future
        guard); returns the generator's summary. ScenarioFailed when the generator fails."""
        self.create_topic(topic, self.partitions)
        end = time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime(time.time() - 3600))
        print(
            f"  producing {topic}: {hours:g} h of {','.join(profiles)} at rate scale {rate_scale:g} ...",
            file=sys.stderr,
            flush=True,
        )
        produced = subprocess.run(
            [
                sys.executable,
                "-m",
                "generator",
                # The stream with this topic and its partitions: one profile per partition.
                "--conf",
                str(self.stream_config(self.scratch / f"produce_{topic}", topic)),
                "--topic",
                topic,
                "backlog",
                "--hours",
                f"{hours:g}",
                "--end",
                end,
                "--profiles",
                ",".join(profiles),
                "--rate-scale",
                repr(rate_scale),
            ],
            env=self.env,
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        if produced.returncode != 0:
            raise ScenarioFailed(
                f"the generator failed for {topic} ({produced.returncode}):\n{produced.stderr[-3000:]}"
            )
        return json.loads(produced.stdout.strip().splitlines()[-1])

    def uniform_backlog(self) -> dict:
        """The uniform backlog, produced once; a failure is kept and raised again, so a second
        scenario never appends a second backlog to the same topic."""
        if self._uniform is None:
            hours = uniform_hours(self.args.records, self.partitions)
            try:
                self._uniform = {**self.produce_backlog("bench_uniform", ("heavy",), hours), "hours": hours}
            except ScenarioFailed as error:
                self._uniform = {"failed": str(error)}
        if "failed" in self._uniform:
            raise ScenarioFailed(self._uniform["failed"])
        return self._uniform

    def uniform_run(self, run: str) -> dict:
        """Run (a) or (b) on the uniform backlog, once per benchmark."""
        if run not in self._uniform_runs:
            backlog = self.uniform_backlog()
            runner = {"a": self.tidemark_run, "b": self.peer_run}[run]
            self._uniform_runs[run] = runner("bench_uniform", f"uniform_{run}", backlog["records"])
        return self._uniform_runs[run]

    def stream_config(self, run_dir: Path, topic: str) -> Path:
        """The stream's configuration (conf/streams.yaml) with this topic, the benchmark's broker
        and the run's own lake and checkpoints."""
        import yaml

        document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
        stream = document["streams"][STREAM]
        stream["source"].update(
            topic=topic, bootstrap_servers=self.bootstrap, partitions=self.topic_partitions.get(topic, self.partitions)
        )
        stream["lake"].update(root=str(run_dir / "lake"), checkpoint_root=str(run_dir / "checkpoints"))
        run_dir.mkdir(parents=True, exist_ok=True)
        path = run_dir / "streams.yaml"
        path.write_text(yaml.safe_dump(document))
        return path

    def load_stream(self, conf: Path):
        from tidemark.stream_config import load_stream

        return load_stream(conf, STREAM, self.env)  # the jobs' environment: their lake, their checkpoints

    # runs: each returns its figures, or {"failed": reason}

    def tidemark_run(self, topic: str, name: str, produced: int) -> dict:
        """(a): the persist job, aligned, available_now, the row budget; figures from its lake."""
        print(f"  run (a) tidemark on {topic} ...", file=sys.stderr, flush=True)
        run_dir = self.scratch / name
        try:
            conf = self.stream_config(run_dir, topic)
            command = [
                sys.executable,
                str(REPO / "spark_jobs" / "persist" / "job.py"),
                "--stream",
                STREAM,
                "--conf",
                str(conf),
                "--mode",
                "available_now",
                "--max-records-per-batch",
                str(self.args.max_records_per_batch),
            ]
            wall_s, peak = run_measured(command, self.env, run_dir / "job.log")
            lake = tidemark_lake_figures(self.load_stream(conf))
        except Exception as error:  # noqa: BLE001
            return _failed(error)
        counted = lake["persisted"] + lake["late"] + lake["quarantined"]
        return {
            "batches": micro_batches_in_log(run_dir / "job.log"),
            "profile": run_profile(run_dir / "job.log", wall_s),
            **lake,
            "records": counted,
            "unread": produced - counted,
            "wall_seconds": round(wall_s, 1),
            "records_per_second": records_per_second(counted, wall_s),
            **_memory_figures(peak),
        }

    def peer_run(self, topic: str, name: str, produced: int) -> dict:
        """(b): Spark's Kafka source into the events layout, its own process; its batches kept."""
        print(f"  run (b) Spark Kafka source -> Delta on {topic} ...", file=sys.stderr, flush=True)
        try:
            conf = self.stream_config(self.scratch / name, topic)
            report, wall_s, peak = self._measured_script(
                "spark_kafka_delta.py",
                [
                    "--conf",
                    str(conf),
                    "--stream",
                    STREAM,
                    "--max-offsets-per-trigger",
                    str(self.args.max_records_per_batch),
                ],
                self.scratch / name,
            )
        except Exception as error:  # noqa: BLE001
            return _failed(error)
        batches = [batch for batch in report["batches"] if batch["rows"] > 0]
        rows = sum(batch["rows"] for batch in batches)
        return {
            "records": rows,
            "unread": produced - rows,
            "unparsed": sum(batch["unparsed"] for batch in batches),
            "batches": len(batches),
            "wall_seconds": round(wall_s, 1),
            "session_seconds": report["session_seconds"],
            "query_seconds": report["query_seconds"],
            "records_per_second": records_per_second(rows, wall_s),
            **_memory_figures(peak),
            "per_batch": batches,
        }

    def read_ceiling_run(self, topic: str, produced: int) -> dict:
        """(c): confluent-kafka into Arrow arrays; records/s over its timed read."""
        print(f"  run (c) read ceiling on {topic} ...", file=sys.stderr, flush=True)
        try:
            report, wall_s, peak = self._measured_script(
                "read_ceiling.py", ["--bootstrap", self.bootstrap, "--topic", topic], self.scratch / "uniform_c"
            )
        except Exception as error:  # noqa: BLE001
            return _failed(error)
        return _ceiling_figures(report, produced, wall_s, peak)

    def write_ceiling_run(self, topic: str, produced: int) -> dict:
        """(d): the decoded rows cached in memory, appended in chunks of the budget; records/s over
        the appends only."""
        print(f"  run (d) write ceiling on {topic} ...", file=sys.stderr, flush=True)
        try:
            conf = self.stream_config(self.scratch / "uniform_d", topic)
            report, wall_s, peak = self._measured_script(
                "write_ceiling.py",
                [
                    "--conf",
                    str(conf),
                    "--stream",
                    STREAM,
                    "--max-records-per-batch",
                    str(self.args.max_records_per_batch),
                ],
                self.scratch / "uniform_d",
            )
        except Exception as error:  # noqa: BLE001
            return _failed(error)
        return _ceiling_figures(report, produced, wall_s, peak)

    def _measured_script(self, script: str, arguments: list[str], run_dir: Path) -> tuple[dict, float, PeakMemory]:
        """Run benchmarks/<script> with ``arguments`` and ``--report run_dir/report.json``, measured;
        returns (its report, wall seconds, its peak memory)."""
        report_path = run_dir / "report.json"
        command = [sys.executable, str(REPO / "benchmarks" / script), *arguments, "--report", str(report_path)]
        wall_s, peak = run_measured(command, self.env, run_dir / "job.log")
        return json.loads(report_path.read_text()), wall_s, peak


def _ceiling_figures(report: dict, produced: int, wall_s: float, peak: PeakMemory) -> dict:
    """A ceiling's own report (records, its timed part, records/s over it) plus the process."""
    return {
        **report,
        "unread": produced - report["records"],
        "process_wall_seconds": round(wall_s, 1),
        **_memory_figures(peak),
    }


def _memory_figures(peak: PeakMemory) -> dict:
    """Peak summed RSS (what the targets are written in), peak summed PSS (shared pages counted
    once), and the RSS per kind of process at the RSS peak, in MB."""
    return {
        "peak_rss_megabytes": round(peak.rss / 1e6),
        "peak_pss_megabytes": round(peak.pss / 1e6),
        "rss_megabytes_at_peak_by_process": {
            kind: round(rss / 1e6) for kind, rss in sorted(peak.rss_by_kind_at_peak.items())
        },
    }


def uniform_hours(records: int, partitions: int = PARTITIONS) -> int:
    """Hours of four heavy partitions that hold at least ``records``."""
    return math.ceil(records / (HEAVY_RECORDS_PER_HOUR * partitions))


def run_measured(
    command: list[str], env: dict, log_file: Path, timeout_s: float = RUN_TIMEOUT_S
) -> tuple[float, PeakMemory]:
    """Run a job to completion as its own process group; returns (wall seconds, peak memory of
    its process tree). RunFailed with the last lines of its log when it exits non-zero or runs
    longer than ``timeout_s`` (then it is killed)."""
    import signal

    log_file.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with log_file.open("w") as log:
        job = subprocess.Popen(command, env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    timed_out = threading.Event()

    def kill() -> None:
        timed_out.set()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.pid, signal.SIGKILL)

    watchdog = threading.Timer(timeout_s, kill)
    watchdog.start()
    try:
        peak = wait_sampling_peak_memory(job)
    finally:
        watchdog.cancel()
    wall_s = time.monotonic() - started
    if timed_out.is_set():
        raise RunFailed(f"{Path(command[1]).name} killed after {timeout_s:.0f} s; log {log_file}:\n{_tail(log_file)}")
    if job.returncode != 0:
        raise RunFailed(f"{Path(command[1]).name} exited {job.returncode}; log {log_file}:\n{_tail(log_file)}")
    return wall_s, peak


def _tail(log_file: Path, lines: int = 20) -> str:
    return "\n".join(log_file.read_text(errors="replace").splitlines()[-lines:])[-3000:]


def _failed(error: Exception) -> dict:
    """Any failure of one run is that run's result: recorded, printed, and the benchmark goes on."""
    reason = str(error) if isinstance(error, RunFailed) else f"{type(error).__name__}: {error}"
    print(f"  FAILED: {reason.splitlines()[0] if reason else type(error).__name__}", file=sys.stderr, flush=True)
    return {"failed": reason}


def micro_batches_in_log(log_file: Path) -> int | None:
    """The persist job's micro-batches that admitted records, from its structured log lines
    (``batch_persisted``); None when the log has none (then the job's logging changed)."""
    batches = 0
    found = False
    for line in log_file.read_text(errors="replace").splitlines():
        if not line.startswith("{"):
            continue  # Spark's own plain-text lines
        with contextlib.suppress(ValueError):
            entry = json.loads(line)
            if entry.get("event") == "batch_persisted":
                found = True
                batches += int(entry.get("records", 0) + entry.get("late", 0) + entry.get("quarantined", 0) > 0)
    return batches if found else None


def run_profile(log_file: Path, wall_s: float) -> dict | None:
    """Where a persist run's time went, from its own log: the process's wall time, the query's
    phases (``query_finished``: up to the query's start, planning, writing, the checkpoint's
    write-ahead log and commits) and per batch its seconds by phase (``batch_persisted``:
    waiting for its tables, its records, its seals and ledger commits), with their sums. None
    when the log has no ``query_finished`` line (the job failed, or its logging changed)."""
    query, batches = None, []
    for line in log_file.read_text(errors="replace").splitlines():
        if not line.startswith("{"):
            continue
        with contextlib.suppress(ValueError):
            entry = json.loads(line)
            if entry.get("event") == "batch_persisted":
                batches.append(
                    {
                        "records": entry.get("records", 0) + entry.get("late", 0) + entry.get("quarantined", 0),
                        "seconds": entry.get("seconds"),
                        **entry.get("seconds_by_phase", {}),
                    }
                )
            elif entry.get("event") == "query_finished":
                query = entry.get("seconds")
    if query is None:
        return None
    phases = sorted({key for batch in batches for key in batch} - {"records", "seconds"})
    return {
        "process_wall_seconds": round(wall_s, 1),
        # Outside the query: the process's, JVM's and session's start, the topic's check, the exit.
        "outside_query_seconds": round(wall_s - query["total"] + query["startup"], 1),
        "query_seconds": query,
        "batch_seconds_by_phase": {phase: round(sum(b.get(phase, 0) for b in batches), 2) for phase in phases},
        "batches": batches,
    }


def tidemark_lake_figures(stream) -> dict:
    """What a persist run left in its lake, read with ``deltalake`` (no Spark job): rows of events,
    late and quarantine; late rows per partition; ``aligned_slices``, the ledger's batch ids that
    admitted records (one per micro-batch, or several when a micro-batch holds several slices)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    def rows(table: str) -> int:
        path = stream.table_path(table)
        return DeltaTable(path).count() if DeltaTable.is_deltatable(path) else 0

    ledger = pa.table(
        DeltaTable(stream.table_path("ledger")).scan(columns=["step_id", "records", "late", "quarantined"])
    )
    admitting = pc.greater(pc.add(pc.add(ledger["records"], ledger["late"]), ledger["quarantined"]), 0)
    aligned_slices = len(pc.unique(ledger.filter(admitting)["step_id"]))
    late_per_partition: dict[int, int] = {}
    if DeltaTable.is_deltatable(stream.table_path("late")):
        partitions = pa.table(DeltaTable(stream.table_path("late")).scan(columns=["source_partition"]))[
            "source_partition"
        ]
        for entry in pc.value_counts(partitions).to_pylist():
            late_per_partition[entry["values"]] = entry["counts"]
    return {
        "aligned_slices": aligned_slices,
        "persisted": rows("events"),
        "late": rows("late"),
        "quarantined": rows("quarantine"),
        "late_per_partition": {str(p): n for p, n in sorted(late_per_partition.items())},
        "ledger_records": pc.sum(ledger["records"]).as_py() or 0,
    }


# ---------------------------------------------------------------------------------------------
# scenarios: each returns {"backlog(s)": ..., "runs": {...}, "ratios"/"targets": {...}}


def uniform_scenario(bench: Bench) -> dict:
    backlog = bench.uniform_backlog()
    produced = backlog["records"]
    runs = {
        "a": bench.uniform_run("a"),
        "b": bench.uniform_run("b"),
        "c": bench.read_ceiling_run("bench_uniform", produced),
        "d": bench.write_ceiling_run("bench_uniform", produced),
    }
    return {
        "backlog": _backlog_figures(backlog, hours=backlog["hours"]),
        "runs": runs,
        "ratios": {
            "records_per_second a/b": ratio(runs, "a", ["b"], "records_per_second", at_least=1.0),
            "records_per_second a/min(c,d)": ratio(runs, "a", ["c", "d"], "records_per_second", at_least=0.7),
        },
    }


def skewed_scenario(bench: Bench) -> dict:
    topic = "bench_skewed"
    backlog = bench.produce_backlog(topic, SKEWED_PROFILES, SKEWED_HOURS)
    produced = backlog["records"]
    produced_per_partition = {str(p["partition"]): p["records"] for p in backlog["partitions"]}
    runs = {"a": bench.tidemark_run(topic, "skewed_a", produced), "b": bench.peer_run(topic, "skewed_b", produced)}
    a = runs["a"]
    if not failed(a):
        # tidemark keeps a late row in its late table: kept, as an events row is.
        a["kept"] = a["persisted"] + a["late"]
        a["kept_records_per_second"] = records_per_second(a["kept"], a["wall_seconds"])
    b = runs["b"]
    if not failed(b):
        delay_ms = bench.load_stream(bench.scratch / "skewed_b" / "streams.yaml").event_time.allowed_lateness_ms
        try:
            from benchmarks.spark_watermark_emulation import read_event_times

            event_times = read_event_times(bench.bootstrap, topic, list(range(bench.partitions)))
            runs["b"] = {**b, **kept_under_spark_watermark(b["per_batch"], event_times, delay_ms)}
            runs["b"]["kept_records_per_second"] = records_per_second(runs["b"]["kept"], b["wall_seconds"])
        except Exception as error:  # noqa: BLE001
            # The run's own figures stay; without the replay it has no kept count, so no ratio.
            runs["b"] = {**b, **_failed(RunFailed(f"replaying Spark's watermark over (b)'s batches failed: {error}"))}
    return {
        "backlog": _backlog_figures(
            backlog, hours=SKEWED_HOURS, profiles=SKEWED_PROFILES, per_partition=produced_per_partition
        ),
        "runs": runs,
        "ratios": {"kept_records_per_second a/b": ratio(runs, "a", ["b"], "kept_records_per_second", at_least=1.0)},
    }


def kept_under_spark_watermark(batches: list[dict], event_times: dict[int, list[int]], delay_ms: int) -> dict:
    """Rows (b) would have kept and dropped under Spark's global watermark with ``delay_ms``,
    replayed over its batches, with a cross-check: the watermarks from the record-level replay must
    equal those from the maxima (b) observed itself, and the rows per partition must match."""
    replayed = replay_plain_watermark(batches, event_times, delay_ms)
    from_maxima = watermarks_from_maxima(batches, delay_ms)
    kept = totals_per_partition([batch.kept for batch in replayed])
    dropped = totals_per_partition([batch.dropped for batch in replayed])
    observed_rows = totals_per_partition([{int(p): n for p, n in b["rows_per_partition"].items()} for b in batches])
    replayed_rows = {p: kept.get(p, 0) + dropped.get(p, 0) for p in observed_rows}
    return {
        "kept": sum(kept.values()),
        "dropped": sum(dropped.values()),
        "kept_per_partition": {str(p): n for p, n in kept.items()},
        "dropped_per_partition": {str(p): n for p, n in dropped.items()},
        "watermark_delay_ms": delay_ms,
        "watermark_per_batch": [
            {
                "batch_id": b.batch_id,
                "watermark": format_optional_event_time(b.watermark_ms),
                "dropped": sum(b.dropped.values()),
            }
            for b in replayed
        ],
        "replay_agrees": all(from_maxima[b.batch_id] == b.watermark_ms for b in replayed)
        and replayed_rows == observed_rows,
    }


def sparse_scenario(bench: Bench) -> dict:
    # 18,000 × scale records an hour per heavy partition (rounded by the generator): aim at the
    # same total over 7 days and over 1 hour; the summaries say what was really produced.
    per_hour_all = HEAVY_RECORDS_PER_HOUR * bench.partitions
    sparse = bench.produce_backlog(
        "bench_sparse", ("heavy",), SPARSE_HOURS, SPARSE_RECORDS / (per_hour_all * SPARSE_HOURS)
    )
    dense = bench.produce_backlog("bench_dense", ("heavy",), 1, SPARSE_RECORDS / per_hour_all)
    runs = {
        "a sparse": bench.tidemark_run("bench_sparse", "sparse_a", sparse["records"]),
        "a dense": bench.tidemark_run("bench_dense", "dense_a", dense["records"]),
    }
    return {
        "backlogs": {
            "sparse": _backlog_figures(sparse, hours=SPARSE_HOURS),
            "dense": _backlog_figures(dense, hours=1),
        },
        "runs": runs,
        "targets": {"wall_seconds sparse/dense": ratio(runs, "a sparse", ["a dense"], "wall_seconds", limit=2.0)},
    }


def memory_scenario(bench: Bench) -> dict:
    uniform = bench.uniform_backlog()
    # The same rate over a quarter of the hours: batches of the same size, a quarter as many.
    hours = uniform["hours"] / 4
    quarter = bench.produce_backlog("bench_memory_1x", ("heavy",), hours)
    runs = {
        "a 1x": bench.tidemark_run("bench_memory_1x", "memory_a_1x", quarter["records"]),
        "a 4x": bench.uniform_run("a"),
        "b 4x": bench.uniform_run("b"),
    }
    return {
        "backlogs": {
            "1x": _backlog_figures(quarter, hours=hours),
            "4x": _backlog_figures(uniform, hours=uniform["hours"]),
        },
        "runs": runs,
        "targets": {
            "peak_rss a 4x/1x": ratio(runs, "a 4x", ["a 1x"], "peak_rss_megabytes", limit=1.1),
            "peak_rss a/b (4x)": ratio(runs, "a 4x", ["b 4x"], "peak_rss_megabytes", limit=1.0),
            # Not targets: the same with shared pages counted once (see benchmarks/process_memory.py).
            "peak_pss a 4x/1x": ratio(runs, "a 4x", ["a 1x"], "peak_pss_megabytes"),
            "peak_pss a/b (4x)": ratio(runs, "a 4x", ["b 4x"], "peak_pss_megabytes"),
        },
    }


def continuous_scenario(bench: Bench) -> dict:
    from benchmarks.continuous_latency import measure_latency

    topic = "bench_continuous"
    run_dir = bench.scratch / "continuous_a"
    conf = bench.stream_config(run_dir, topic)
    stream = bench.load_stream(conf)
    trigger_s = stream.persist.trigger_interval_ms / 1000
    bench.create_topic(topic, bench.partitions)
    job = [
        sys.executable,
        str(REPO / "spark_jobs" / "persist" / "job.py"),
        "--stream",
        STREAM,
        "--conf",
        str(conf),
        "--mode",
        "continuous",
        "--max-records-per-batch",
        str(bench.args.max_records_per_batch),
    ]
    # No disorder: the log timestamp (the event time) is then the moment the record was sent.
    duration = f"{round(bench.args.latency_minutes * 60_000)}ms"
    producer = [
        sys.executable,
        "-m",
        "generator",
        "--topic",
        topic,
        "live",
        "--duration",
        duration,
        "--profiles",
        ",".join(DEMO_PROFILES),
        "--max-disorder",
        "0s",
    ]
    print(f"  run (a) continuous on {topic} for {bench.args.latency_minutes:g} min ...", file=sys.stderr, flush=True)
    # The last records wait at most one trigger interval and one batch; two intervals and 30 s
    # more leave room for a slow batch before a record counts as never visible.
    grace_s = 2 * trigger_s + 30
    try:
        figures = measure_latency(job, producer, bench.env, REPO, stream.table_path("events"), run_dir, grace_s=grace_s)
    except Exception as error:  # noqa: BLE001
        figures = _failed(error)
    limit_s = trigger_s + 10
    if failed(figures):
        p99_target = target(None, limit_s, "(a continuous) failed")
    elif figures["p99_seconds"] == "never":  # more than 1% of the records never became visible
        p99_target = {**target(math.inf, limit_s), "value": "never"}
    else:
        p99_target = target(figures["p99_seconds"], limit_s)
    return {
        "producer": {"profiles": list(DEMO_PROFILES), "minutes": bench.args.latency_minutes, "max_disorder": "0s"},
        "trigger_interval_seconds": trigger_s,
        "runs": {"a continuous": figures},
        "targets": {"p99 latency seconds": p99_target},
    }


def _backlog_figures(summary: dict, hours: float, profiles=("heavy",), per_partition: dict | None = None) -> dict:
    figures = {
        "records": summary["records"],
        "hours": hours,
        "profiles": list(profiles),
        "rate_scale": summary.get("rate_scale"),
        "window": [summary["window_start"], summary["window_end"]],
    }
    if per_partition:
        figures["records_per_partition"] = per_partition
    return figures


SCENARIO_RUNNERS = {
    "uniform": uniform_scenario,
    "skewed": skewed_scenario,
    "sparse": sparse_scenario,
    "memory": memory_scenario,
    "continuous": continuous_scenario,
    "partitions": partitions_scenario,
}


if __name__ == "__main__":
    sys.exit(main())
