"""The incident of issue 36, as a user meets it: a recovery of one partition's whole range while
the live job catches up a backlog, on a fresh local lake.

    .venv/bin/python benchmarks/recovery_during_catch_up.py [--records 20000] [--recover-after 25]
        [--max-records-per-batch 2000] [--results PATH]

Starts its own broker (temporary state, free loopback port), produces --records records over 2
partitions (event times over the last two hours, in order), starts the live persist job
(spark_jobs/persist/job.py, available_now) and, --recover-after seconds later, a recovery of
partition 0's whole range (spark_jobs/replay/recover.py), each as spark-submit would run it, in a
process of its own. Then, as Airflow would, it runs again whatever did not finish: live once if
it failed (its task's retry), the recovery until it exits 0 (it yields while live's batch cannot
commit: exit 75), at most three times each.

Figures: each run's exit code and wall time, why a run ended badly (its last error line), the
records in the lake after the first runs and at the end, (partition, offset) pairs persisted
twice, and the recovery's own count of rows it wrote. The same script runs in a checkout of an
older commit, for the figures before.

Printed, and written to benchmarks/results/recovery_during_catch_up.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.scratch_environment import scratch_broker, scratch_environment  # noqa: E402
from connectors.jars import ensure_jars, shared_jars_root  # noqa: E402

STREAM = "telemetry"
TOPIC = "bench_recovery_during_catch_up"
PARTITIONS = 2
RESULTS = REPO / "benchmarks" / "results" / "recovery_during_catch_up.json"
AGAIN = 3  # runs of a job after its first, as Airflow's retries or reschedules would make


def main() -> int:
    args = _parse_args()
    jars = shared_jars_root()
    ensure_jars(jars, ["kafka", "delta"])
    with tempfile.TemporaryDirectory(prefix="tidemark-bench-recovery-") as scratch_name:
        scratch = Path(scratch_name)
        with scratch_broker(scratch, jars) as broker:
            figures = run_benchmark(broker, scratch, jars, args)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    print(f"written to {args.results}")
    return 0


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--recover-after", type=float, default=25.0, help="seconds after live's start")
    parser.add_argument("--max-records-per-batch", type=int, default=2_000, help="live's row budget")
    parser.add_argument("--results", type=Path, default=RESULTS)
    return parser.parse_args()


def run_benchmark(broker, scratch: Path, jars: Path, args: argparse.Namespace) -> dict:
    broker.create_topic(TOPIC, PARTITIONS)
    per_partition = _produce(broker.bootstrap, args.records)
    env = scratch_environment(broker.bootstrap, scratch, jars)
    conf = _config(scratch / "streams.yaml", broker.bootstrap, scratch, args.max_records_per_batch)
    live_command = [sys.executable, str(REPO / "spark_jobs" / "persist" / "job.py"), "--stream", STREAM]
    live_command += ["--conf", str(conf), "--mode", "available_now"]
    request = {"stream": STREAM, "partition": 0, "ranges": [{"start": 0, "end": per_partition}], "reason": "bench"}
    recover_command = [sys.executable, str(REPO / "spark_jobs" / "replay" / "recover.py"), "--conf", str(conf)]
    recover_command += ["--request", json.dumps(request)]

    runs: list[dict] = []
    live = _start(live_command, env, scratch / "live-0.log")
    time.sleep(args.recover_after)
    recovery = _start([*recover_command, "--result", str(scratch / "recovery-0.json")], env, scratch / "recovery-0.log")
    runs += [_finish("live", live, scratch / "live-0.log"), _finish("recovery", recovery, scratch / "recovery-0.log")]
    after_first = _lake(scratch, env)

    last = {run["job"]: run["exit"] for run in runs}
    for job, command in (("live", live_command), ("recovery", recover_command)):
        for number in range(1, AGAIN + 1):
            if last[job] == 0:
                break
            if last[job] == 75:
                time.sleep(5)  # a reschedule's delay, shortened
            log = scratch / f"{job}-{number}.log"
            extra = ["--result", str(scratch / f"recovery-{number}.json")] if job == "recovery" else []
            runs.append(_finish(job, _start([*command, *extra], env, log), log))
            last[job] = runs[-1]["exit"]
    inserted = [_inserted(scratch / f"recovery-{n}.json") for n in range(AGAIN + 1)]
    final = _lake(scratch, env)
    produced = per_partition * PARTITIONS
    return {
        "records_produced": produced,
        "live_row_budget": args.max_records_per_batch,
        "recovery_started_after_s": args.recover_after,
        "runs": runs,
        "after_the_first_runs": {"records_in_lake": after_first["records"], "persisted_twice": after_first["twice"]},
        "at_the_end": {
            "records_in_lake": final["records"],
            "missing": produced - final["distinct"],
            "persisted_twice": final["twice"],
        },
        "recovery_inserted_by_run": [n for n in inserted if n is not None],
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
        ).stdout.strip(),
    }


def _start(command: list[str], env: dict, log: Path) -> tuple[subprocess.Popen, float]:
    out = log.open("w")
    return subprocess.Popen(command, env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT), time.monotonic()


def _finish(job: str, started: tuple[subprocess.Popen, float], log: Path) -> dict:
    process, at = started
    code = process.wait(1800)
    run = {"job": job, "exit": code, "seconds": round(time.monotonic() - at, 1)}
    if code != 0:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
        errors = [line for line in lines if "Exception" in line or "Error" in line or "yield" in line.lower()]
        run["why"] = (errors[-1] if errors else lines[-1] if lines else "")[:300]
    return run


def _inserted(result: Path) -> int | None:
    if not result.exists():
        return None
    outcome = json.loads(result.read_text())
    return outcome.get("inserted", 0)


def _produce(bootstrap: str, records: int) -> int:
    from confluent_kafka import Producer

    sys.path.insert(0, str(REPO / "tests"))
    from harness.persist_job import telemetry_value

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    now_ms = int(time.time() * 1000)
    per_partition = records // PARTITIONS
    for i in range(per_partition):
        event_ms = now_ms - 2 * 3_600_000 + i * 2 * 3_600_000 // per_partition
        for p in range(PARTITIONS):
            while True:
                try:
                    producer.produce(TOPIC, telemetry_value(f"s{p}-{i % 9}", event_ms), partition=p, timestamp=event_ms)
                    break
                except BufferError:
                    producer.poll(0.1)
    assert producer.flush(60) == 0
    return per_partition


def _config(path: Path, bootstrap: str, scratch: Path, budget: int) -> Path:
    import yaml

    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    stream = document["streams"][STREAM]
    stream["source"].update(topic=TOPIC, bootstrap_servers=bootstrap, partitions=PARTITIONS)
    stream["lake"].update(root=str(scratch / "lake"), checkpoint_root=str(scratch / "checkpoints"))
    stream["persist"]["max_records_per_batch"] = budget
    document["streams"] = {STREAM: stream}
    path.write_text(yaml.safe_dump(document))
    return path


def _lake(scratch: Path, env: dict) -> dict:
    """Records in events, late and quarantine: all, distinct (partition, offset), twice."""
    from collections import Counter

    from deltalake import DeltaTable

    pairs: list[tuple[int, int]] = []
    for table in ("events", "late", "quarantine"):
        path = str(scratch / "lake" / STREAM / table)
        if DeltaTable.is_deltatable(path):
            rows = DeltaTable(path).to_pyarrow_table(columns=["source_partition", "source_offset"])
            pairs += zip(rows["source_partition"].to_pylist(), rows["source_offset"].to_pylist())
    counts = Counter(pairs)
    return {"records": len(pairs), "distinct": len(counts), "twice": sum(1 for n in counts.values() if n > 1)}


if __name__ == "__main__":
    sys.exit(main())
