"""Where a family member's turn goes inside a warm driver (issue 41: a member's turn costs seconds
even with little to do; issue 42's first item, the per-batch cost).

    flock /tmp/tidemark-heavy.lock .venv/bin/python benchmarks/member_turn.py \\
        [--topics 5] [--records 200] [--partitions 4] [--results benchmarks/results/member_turn.json]

Starts a broker of its own and ``--topics`` topics with ``--records`` records each, declared as one
family (benchmarks/many_streams_catch_up.py's backlog and family), and runs one family driver
(spark_jobs/persist/family_job.py, all members one after another) twice: first over new members
(each creates its six tables), then, after as many records again on every topic, over members
whose tables exist (the turn of an established family). Each turn is cut into parts from the
driver's own log lines, timestamped as they arrive:

- ``set_up``: from the previous member's end to this member's query start (its config, source
  and lake resume);
- ``to_first_batch``: from the query's start to its first batch's start (the streaming source
  started, the tables created or checked, the first plan);
- ``batches``: each batch function's own seconds (its writes and commits);
- ``after_last_batch``: from the last batch to the run's end.

Beside them, the Spark SQL executions that began during the turn, by kind, from Spark's event log
(their seconds summed, nested ones included). The driver's first member carries the JVM's start
and warm-up: it is listed, and left out of the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

RESULTS = REPO / "benchmarks" / "results" / "member_turn.json"
# Spark SQL executions by what their description starts with (the event log's names).
KINDS = (
    ("tidemark_", "micro-batch"),
    ("save at", "delta write"),
    ("Delta: Compute snapshot", "delta snapshot state"),
    ("$anonfun$recordDeltaOperation", "delta log operation"),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=5)
    parser.add_argument("--records", type=int, default=200, help="records per topic, each round")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    from benchmarks.many_streams_catch_up import _backlog, _conf, _listed, produce_backlog
    from benchmarks.scratch_environment import scratch_broker, scratch_environment
    from connectors.jars import ensure_jars, shared_jars_root

    jars = shared_jars_root()
    ensure_jars(jars, ["delta", "spark-kafka"])
    rounds = {}
    with tempfile.TemporaryDirectory(prefix="tidemark-member-turn-") as folder:
        scratch = Path(folder)
        with scratch_broker(scratch, jars) as broker:
            topics = _backlog(broker.bootstrap, args.topics, args.partitions, args.records)
            environment = scratch_environment(broker.bootstrap, scratch, jars)
            conf = _conf(scratch / "family", broker.bootstrap, max_drivers=1)
            members = _listed(conf)
            for name in ("new_members", "members_with_tables"):
                if name == "members_with_tables":
                    # The last minute's event times: on time for G, as a live tick's new records are.
                    produce_backlog(broker.bootstrap, topics, args.partitions, args.records, span_ms=60_000)
                rounds[name] = _profiled_driver(conf, members, environment, scratch / name)
                print(_line(name, rounds[name]), flush=True)

    result = {
        "benchmark": "member_turn",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cores": os.cpu_count()},
        "topics": args.topics,
        "partitions_per_topic": args.partitions,
        "records_per_topic_each_round": args.records,
        "spark_python_workers_import_pyspark_from": _workers_pyspark(),
        **rounds,
    }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written: {args.results}")
    return 0


def _profiled_driver(conf: Path, members: list[str], environment: dict[str, str], folder: Path) -> dict:
    """One family driver over ``members`` with Spark's event log on; its turns, cut into parts."""
    folder.mkdir(parents=True)
    events = folder / "spark-events"
    events.mkdir()
    command = [sys.executable, str(REPO / "spark_jobs" / "persist" / "family_job.py"), "--conf", str(conf)]
    command += [argument for name in members for argument in ("--stream", name)]
    command += ["--result-dir", str(folder)]
    # The driver is started as spark-submit would start it here: a local session of its own, to
    # which these settings are handed at launch.
    submit_args = f"--conf spark.eventLog.enabled=true --conf spark.eventLog.dir={events} "
    submit_args += "--conf spark.eventLog.compress=false pyspark-shell"
    lines = []
    started, cpu_before = time.time(), _machine_cpu_seconds()
    with subprocess.Popen(
        command,
        env={**environment, "TIDEMARK_CONF": str(conf), "PYSPARK_SUBMIT_ARGS": submit_args},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as driver:
        for line in driver.stdout:
            lines.append((time.time(), line))
    if driver.returncode != 0:
        (folder / "driver.log").write_text("".join(line for _, line in lines))
        raise SystemExit(f"the driver failed ({driver.returncode}); its output: {folder / 'driver.log'}")
    cpu_seconds = _machine_cpu_seconds() - cpu_before
    turns = _turns(lines, started)
    executions = _sql_executions(events)
    for turn in turns:
        turn["spark_sql"] = _by_kind(executions, turn["from"], turn["to"])
    return {
        "driver_seconds": round(lines[-1][0] - started, 1),
        # The whole machine's, from /proc/stat: run it with nothing else running.
        "machine_cpu_seconds": round(cpu_seconds, 1),
        "first_member": _public(turns[0]),
        "medians_of_the_others": _medians(turns[1:]),
        "turns": [_public(turn) for turn in turns],
    }


def _machine_cpu_seconds() -> float:
    """CPU seconds the machine has spent in user, nice and system time since it started."""
    with open("/proc/stat") as stat:
        user, nice, system = (int(value) for value in stat.readline().split()[1:4])
    return (user + nice + system) / os.sysconf("SC_CLK_TCK")


def _workers_pyspark() -> str:
    """Where Spark's Python workers import pyspark from: the venv's compiled package once
    stack.compiled_pyspark's .pth file is installed, else the zip Spark puts on their path."""
    import sysconfig

    from stack.compiled_pyspark import PATH_FILE

    installed = (Path(sysconfig.get_paths()["purelib"]) / PATH_FILE).is_file()
    return "compiled package (stack/compiled_pyspark.py)" if installed else "pyspark.zip"


def _turns(lines: list[tuple[float, str]], started: float) -> list[dict]:
    """Each member's turn from the driver's query_started, batch_persisted and query_finished lines."""
    turns, turn, previous_end = [], None, started
    for at, line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        kind = event.get("event") if isinstance(event, dict) else None
        if kind == "query_started":
            turn = {"stream": event["stream"], "from": previous_end, "query_at": at, "batches": []}
        elif kind == "batch_persisted" and turn is not None:
            turn["batches"].append((at, event["seconds"], event["records"]))
        elif kind == "query_finished" and turn is not None:
            first_batch_start = turn["batches"][0][0] - turn["batches"][0][1] if turn["batches"] else at
            turn.update(
                to=at,
                set_up=round(turn["query_at"] - turn["from"], 2),
                to_first_batch=round(first_batch_start - turn["query_at"], 2),
                batch_seconds=[round(seconds, 2) for _, seconds, _ in turn["batches"]],
                records=[records for _, _, records in turn["batches"]],
                after_last_batch=round(at - (turn["batches"][-1][0] if turn["batches"] else at), 2),
                total=round(at - turn["from"], 2),
            )
            turns.append(turn)
            previous_end, turn = at, None
    return turns


def _sql_executions(events: Path) -> list[tuple[float, float, str]]:
    """(start, end, description) of every SQL execution in the event log, times in s since the epoch."""
    starts, ends = {}, {}
    # Spark 4 writes one folder per application, its events in files named events_<n>_<app>.
    for path in sorted(events.rglob("events_*")):
        for line in path.read_text().splitlines():
            event = json.loads(line)
            kind = event["Event"]
            if kind.endswith("SQLExecutionStart"):
                starts[event["executionId"]] = (event["time"] / 1000, event.get("description") or "")
            elif kind.endswith("SQLExecutionEnd"):
                ends[event["executionId"]] = event["time"] / 1000
    return [(start, ends.get(key, start), text) for key, (start, text) in starts.items()]


def _by_kind(executions: list[tuple[float, float, str]], since: float, until: float) -> dict[str, dict]:
    counted: dict[str, dict] = {}
    for start, end, text in executions:
        if not since <= start < until:
            continue
        kind = next((name for prefix, name in KINDS if text.startswith(prefix)), "other")
        entry = counted.setdefault(kind, {"count": 0, "seconds": 0.0})
        entry["count"] += 1
        entry["seconds"] = round(entry["seconds"] + end - start, 2)
    return counted


def _public(turn: dict) -> dict:
    return {key: value for key, value in turn.items() if key not in ("from", "to", "query_at", "batches")}


def _medians(turns: list[dict]) -> dict:
    if not turns:
        return {}
    medians = {
        part: round(statistics.median(turn[part] for turn in turns), 2)
        for part in ("set_up", "to_first_batch", "after_last_batch", "total")
    }
    medians["batches"] = statistics.median(len(turn["batch_seconds"]) for turn in turns)
    medians["first_batch"] = round(statistics.median(turn["batch_seconds"][0] for turn in turns), 2)
    medians["later_batches_each"] = round(
        statistics.median([seconds for turn in turns for seconds in turn["batch_seconds"][1:]] or [0.0]), 2
    )
    kinds = sorted({kind for turn in turns for kind in turn["spark_sql"]})
    medians["spark_sql"] = {
        kind: {
            "count": statistics.median(turn["spark_sql"].get(kind, {}).get("count", 0) for turn in turns),
            "seconds": round(statistics.median(turn["spark_sql"].get(kind, {}).get("seconds", 0) for turn in turns), 2),
        }
        for kind in kinds
    }
    return medians


def _line(name: str, profile: dict) -> str:
    medians = profile["medians_of_the_others"]
    return (
        f"{name}: driver {profile['driver_seconds']} s, {profile['machine_cpu_seconds']} CPU-s; a member's turn (median of all but the first) "
        f"{medians['total']} s = set-up {medians['set_up']} + to the first batch {medians['to_first_batch']} "
        f"+ the first batch {medians['first_batch']} + {medians['batches'] - 1:g} more of "
        f"{medians['later_batches_each']} each + after the last {medians['after_last_batch']}; "
        f"Spark SQL: {medians['spark_sql']}"
    )


if __name__ == "__main__":
    sys.exit(main())
