"""Backfill throughput: one simulated day of the demo stream, reconciled against live, on this machine.

    .venv/bin/python benchmarks/backfill_throughput.py [--hours 24]

Starts its own broker (temporary state, free loopback port), produces the demo stream's day with
the data generator (its four default profiles: steady, slow, heavy, bursty), then runs, each as a
separate process as spark-submit would:

1. the live persist job (available_now) over the day: the peer, same machine, same run;
2. the backfill of that day into a shadow table set with --compare: the daily reconciliation;
3. the backfill of that day into the stream's own tables: insert-only over a lake that holds it all.

For each: wall time (JVM start included), batches, records/s, peak resident memory of the process
tree. Results are printed and written to benchmarks/results/backfill_throughput.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.persist_throughput import _bench_config, _json_lines  # noqa: E402
from benchmarks.process_memory import wait_sampling_peak_rss  # noqa: E402
from benchmarks.scratch_environment import scratch_broker, scratch_environment  # noqa: E402
from connectors.jars import ensure_jars, shared_jars_root  # noqa: E402
from tidemark.backfill_result import decode_backfill_outcome  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "backfill_throughput.json"
HOUR_S = 3600


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=int, default=24)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    jars = shared_jars_root()
    ensure_jars(jars, ["kafka", "delta"])
    with tempfile.TemporaryDirectory(prefix="tidemark-bench-") as scratch:
        scratch = Path(scratch)
        with scratch_broker(scratch, jars) as broker:
            figures = run(broker, scratch, jars, args.hours)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    print(f"written to {args.results}")
    return 0


def run(broker, scratch: Path, jars: Path, hours: int) -> dict:
    topic = "bench_backfill"
    broker.create_topic(topic, 4)
    env = scratch_environment(broker.bootstrap, scratch, jars)
    env["TIDEMARK_CONF"] = str(_bench_config(scratch, topic, broker.bootstrap))
    # The day ends at the last full hour, an hour ago: nothing is ahead of the future guard.
    end_s = (int(time.time()) // HOUR_S - 1) * HOUR_S
    start_s = end_s - hours * HOUR_S
    end = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(end_s))
    start = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start_s))
    produced = subprocess.run(
        [sys.executable, "-m", "generator", "--topic", topic, "backlog", "--hours", str(hours), "--end", end],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    records = json.loads(produced.stdout.strip().splitlines()[-1])["records"]

    live = _job(
        scratch,
        env,
        "live",
        [str(REPO / "spark_jobs" / "persist" / "job.py"), "--stream", "telemetry", "--mode", "available_now"],
    )
    window = ["--stream", "telemetry", "--start", start, "--end", end]
    backfill = str(REPO / "spark_jobs" / "replay" / "backfill.py")
    shadow = _job(
        scratch,
        env,
        "reconcile",
        [
            backfill,
            *window,
            "--target",
            "shadow",
            "--shadow-name",
            "bench",
            "--compare",
            "--result",
            str(scratch / "reconcile.json"),
        ],
    )
    into_events = _job(
        scratch, env, "into_events", [backfill, *window, "--target", "events", "--result", str(scratch / "events.json")]
    )
    reconciled = decode_backfill_outcome((scratch / "reconcile.json").read_bytes())
    return {
        "benchmark": "backfill_throughput",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
        "command": "python benchmarks/backfill_throughput.py --hours " + str(hours),
        "day": [start, end],
        "records_produced": records,
        "live_persist": _figures(live, records),
        "backfill_shadow_with_compare": {
            **_figures(shadow, records),
            "differing_partition_hours": len(reconciled.comparison.differing) if reconciled.comparison else None,
        },
        "backfill_into_events_insert_only": _figures(into_events, records),
        "ratio_backfill_shadow_to_live_records_per_second": round(
            _figures(shadow, records)["records_per_second_wall"] / _figures(live, records)["records_per_second_wall"], 2
        ),
    }


def _job(scratch: Path, env: dict, name: str, command: list[str]) -> dict:
    log_file = scratch / f"{name}.log"
    started = time.monotonic()
    job = subprocess.Popen(
        [sys.executable, *command], env=env, stdout=log_file.open("w"), stderr=subprocess.STDOUT, start_new_session=True
    )
    peak = wait_sampling_peak_rss(job)
    wall = time.monotonic() - started
    if job.returncode != 0:
        raise SystemExit(f"{name} failed ({job.returncode}); see {log_file}:\n" + log_file.read_text()[-3000:])
    batches = [entry for entry in _json_lines(log_file) if entry.get("event") == "batch_persisted"]
    return {"wall": wall, "batches": batches, "peak": peak}


def _figures(job: dict, records: int) -> dict:
    batches = job["batches"]
    batch_s = sum(b["seconds"] for b in batches)
    return {
        "wall_seconds": round(job["wall"], 1),
        "batches": len(batches),
        "batch_seconds": round(batch_s, 1),
        "records_read": sum(b["records"] + b["late"] + b["quarantined"] for b in batches),
        "records_per_second_wall": round(records / job["wall"]),
        "records_per_second_batches": round(records / batch_s) if batch_s else None,
        "peak_rss_megabytes": round(job["peak"] / 1e6),
    }


if __name__ == "__main__":
    sys.exit(main())
