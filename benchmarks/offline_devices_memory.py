"""Peak memory of the offline-device detector's backfill over a lake where one partition was
persisted hours behind the others, at 1x and 4x the data.

    .venv/bin/python benchmarks/offline_devices_memory.py [--scales 1,4] [--hours 6] [--slices 6h,1h]
        [--results PATH] [--scratch DIR]

Per scale, with its own broker, lake and checkpoints (temporary unless --scratch):

1. The data generator writes --hours simulated hours ending an hour ago on the hour to a 4-partition
   topic, profiles heavy,heavy,slow,heavy (18,000 records an hour per heavy partition, times the
   scale; the slow partition's devices report about once an hour, so they go offline).
2. The persist job reads it without alignment (record-count slices): the first hour with every
   partition; the rest with partition 3 frozen (the chaos switch: partitions 0-2 are persisted to
   the end, partition 3 not past its first hour); then again without: partition 3's records reach
   the lake hours of event time behind the others'. G, held by partition 3, seals nothing in
   between, so no record is late.
3. The detector backfills the sealed range (first event hour to the sealed horizon) as its own
   process (``spark_jobs/offline_devices/job.py``, as spark-submit runs it), once per slice length of
   --slices (6h is the stream's backfill default); measured: wall time and peak resident memory
   of its process tree (driver JVM, Python driver and workers), sampled every 0.5 s
   (benchmarks/process_memory.py).

Results are printed and written to benchmarks/results/offline_devices_memory.json.
"""

from __future__ import annotations

import argparse
import contextlib
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

from benchmarks.process_memory import wait_sampling_peak_rss  # noqa: E402
from benchmarks.scratch_environment import scratch_broker, scratch_environment  # noqa: E402
from connectors.jars import ensure_jars, shared_jars_root  # noqa: E402
from tidemark.offline_devices_result import OfflineDevicesResult  # noqa: E402

STREAM = "telemetry"
TOPIC = "bench_offline_devices"
PROFILES = ("heavy", "heavy", "slow", "heavy")
FROZEN = 3
HOUR_MS = 3_600_000
RESULTS = REPO / "benchmarks" / "results" / "offline_devices_memory.json"


def main() -> int:
    args = _parse_args()
    jars = shared_jars_root()
    ensure_jars(jars, ["kafka", "delta"])
    runs = []
    for scale in args.scales:
        with _scratch_folder(args.scratch, scale) as scratch, scratch_broker(scratch, jars) as broker:
            print(f"scale {scale:g}: producing and persisting ...", file=sys.stderr, flush=True)
            runs.append(run_scale(broker, scratch, jars, scale, args))
            print(f"  done: {_one_line(runs[-1])}", file=sys.stderr, flush=True)
    figures = {
        "benchmark": "offline_devices_memory",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
        "command": "benchmarks/offline_devices_memory.py " + " ".join(sys.argv[1:]),
        "hours": args.hours,
        "profiles": list(PROFILES),
        "frozen_partition": FROZEN,
        "slices": args.slices,
        "runs": runs,
    }
    results = args.results or RESULTS
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps(figures, indent=2) + "\n")
    print_table(figures)
    print(f"written to {results}")
    return 0


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scales", default="1,4", help="rate scales of the heavy partitions, comma-separated (default 1,4)"
    )
    parser.add_argument("--hours", type=float, default=6, help="simulated hours of data (default 6)")
    parser.add_argument("--slices", default="6h,1h", help="backfill slice lengths, comma-separated (default 6h,1h)")
    parser.add_argument("--results", type=Path, help=f"where to write the JSON (default {RESULTS.relative_to(REPO)})")
    parser.add_argument("--scratch", type=Path, help="keep broker state, lakes and logs under this new folder")
    args = parser.parse_args()
    try:
        args.scales = [float(s) for s in args.scales.split(",")]
    except ValueError:
        parser.error(f"--scales: expected numbers separated by commas, got {args.scales!r}")
    args.slices = [s.strip() for s in args.slices.split(",")]
    return args


@contextlib.contextmanager
def _scratch_folder(kept: Path | None, scale: float):
    if kept is None:
        with tempfile.TemporaryDirectory(prefix="tidemark-bench-offline-") as scratch:
            yield Path(scratch)
    else:
        folder = kept / f"scale-{scale:g}"
        folder.mkdir(parents=True)  # a fresh folder: a second run must not read the first one's lake
        yield folder.resolve()


def run_scale(broker, scratch: Path, jars: Path, scale: float, args: argparse.Namespace) -> dict:
    broker.create_topic(TOPIC, len(PROFILES))
    env = scratch_environment(broker.bootstrap, scratch, jars)
    conf = _bench_config(scratch / "streams.yaml", broker.bootstrap, scratch)
    env["TIDEMARK_CONF"] = str(conf)
    end_ms = (int(time.time() * 1000) // HOUR_MS - 1) * HOUR_MS  # an hour ago, on the hour
    start_ms = end_ms - int(args.hours * HOUR_MS)
    persist = [
        sys.executable,
        str(REPO / "spark_jobs" / "persist" / "job.py"),
        "--stream",
        STREAM,
        "--conf",
        str(conf),
        "--mode",
        "available_now",
        "--no-alignment",
    ]
    # The first hour with every partition: partition 3 gets a watermark, so that, frozen, it holds G.
    first = _produce(env, scale, start_ms, start_ms + HOUR_MS)
    first_s, _ = _run_measured(persist, env, scratch / "persist-first-hour.log")
    rest = _produce(env, scale, start_ms + HOUR_MS, end_ms)
    behind_s, _ = _run_measured(
        persist, {**env, "TIDEMARK_CHAOS_FREEZE": f"{STREAM}:{FROZEN}"}, scratch / "persist-frozen.log"
    )
    # The generator's log timestamps are event times, hours old: a partition that catches up is
    # at once IDLE (caught up, quiet), and with every partition IDLE, G holds. One fresh record per
    # partition keeps them ACTIVE, so that G reaches the end of the data and seals it.
    _produce_heartbeats(broker.bootstrap)
    caught_up_s, _ = _run_measured(persist, env, scratch / "persist-caught-up.log")
    produced = {
        "records": first["records"] + rest["records"],
        "partitions": [
            {"partition": a["partition"], "records": a["records"] + b["records"]}
            for a, b in zip(first["partitions"], rest["partitions"])
        ],
    }
    lake = _lake_figures(env, scratch / "lake" / STREAM)

    backfills = {}
    for slice_text in args.slices:
        result = scratch / f"backfill-{slice_text}.json"
        backfill = [
            sys.executable,
            str(REPO / "spark_jobs" / "offline_devices" / "job.py"),
            "--stream",
            STREAM,
            "--conf",
            str(conf),
            "--start",
            lake["first_hour"],
            "--end",
            lake["horizon"],
            "--output",
            str(scratch / f"offline_devices-{slice_text}"),
            "--slice",
            slice_text,
            "--result",
            str(result),
        ]
        wall_s, peak_rss = _run_measured(backfill, env, scratch / f"backfill-{slice_text}.log")
        summary = OfflineDevicesResult.read(result)
        backfills[slice_text] = {
            "slices": summary.slices,
            "batches": summary.batches,
            "records": summary.records,
            "periods_opened": summary.periods_opened,
            "periods_closed": summary.periods_closed,
            "wall_seconds": round(wall_s, 1),
            "records_per_second": round(summary.records / wall_s) if wall_s else None,
            "peak_rss_megabytes": round(peak_rss / 1e6),
        }
    return {
        "scale": scale,
        "records_produced": produced["records"],
        "records_per_partition": {str(p["partition"]): p["records"] for p in produced["partitions"]},
        "lake": lake,
        "persist_seconds": {
            "first_hour": round(first_s, 1),
            "partition_3_frozen": round(behind_s, 1),
            "catching_up": round(caught_up_s, 1),
        },
        "backfill_range": [lake["first_hour"], lake["horizon"]],
        "backfill_by_slice": backfills,
    }


def _produce(env: dict, scale: float, start_ms: int, end_ms: int) -> dict:
    """Generate [start_ms, end_ms) (whole hours, ending an hour ago or earlier: no record is ahead
    of the future guard's limit); returns the generator's summary."""
    produced = subprocess.run(
        [
            sys.executable,
            "-m",
            "generator",
            "--topic",
            TOPIC,
            "backlog",
            "--hours",
            f"{(end_ms - start_ms) / HOUR_MS:g}",
            "--end",
            _iso(end_ms),
            "--profiles",
            ",".join(PROFILES),
            "--rate-scale",
            f"{scale:g}",
        ],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    if produced.returncode != 0:
        raise SystemExit(f"the generator failed ({produced.returncode}):\n{produced.stderr[-3000:]}")
    return json.loads(produced.stdout.strip().splitlines()[-1])


def _produce_heartbeats(bootstrap: str) -> None:
    from confluent_kafka import Producer

    now_ms = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition in range(len(PROFILES)):
        value = {
            "device_id": f"bench-heartbeat-{partition}",
            "event_time": _iso(now_ms - 60_000),
            "lat": 52.37,
            "lon": 4.89,
            "battery": 90,
        }
        producer.produce(TOPIC, value=json.dumps(value).encode(), partition=partition, timestamp=now_ms)
    if producer.flush(60):
        raise SystemExit("the heartbeat records did not reach the broker")


def _bench_config(path: Path, bootstrap: str, scratch: Path) -> Path:
    import yaml

    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    stream = document["streams"][STREAM]
    stream["source"].update(topic=TOPIC, bootstrap_servers=bootstrap)
    stream["lake"].update(root=str(scratch / "lake"), checkpoint_root=str(scratch / "checkpoints"))
    path.write_text(yaml.safe_dump(document))
    return path


def _lake_figures(env: dict, lake: Path) -> dict:
    """What the persist runs left: records per partition, the sealed range, and how far partition
    3's records were behind the others' when they were written (event time at the first commit)."""
    code = f"""
import json
import pyarrow as pa, pyarrow.compute as pc
from deltalake import DeltaTable
events = pa.table(DeltaTable({str(lake / "events")!r}).scan(columns=["source_partition", "event_time"]))
hours = pa.table(DeltaTable({str(lake / "seals")!r}).scan(columns=["hour"])).column("hour").cast(pa.int64())
ledger = pa.table(DeltaTable({str(lake / "ledger")!r}).scan(
    columns=["step_id", "source_partition", "records", "min_event_time", "max_event_time"])).to_pylist()
parts = events.column("source_partition")
# How far behind partition {FROZEN}'s records reached the lake: the oldest record of its first batch
# after the freeze against the newest record the other partitions had persisted before it.
read = sorted(r["step_id"] for r in ledger if r["source_partition"] == {FROZEN} and r["records"])
resumed = next(b for a, b in zip(read, read[1:]) if b > a + 1)
others = max(r["max_event_time"] for r in ledger if r["source_partition"] != {FROZEN} and r["records"] and r["batch_id"] < resumed)
oldest = min(r["min_event_time"] for r in ledger if r["source_partition"] == {FROZEN} and r["batch_id"] == resumed)
print(json.dumps({{
    "records": events.num_rows,
    "per_partition": {{str(p): pc.sum(pc.equal(parts, p)).as_py() for p in range(4)}},
    "first_event_ms": pc.min(events.column("event_time").cast(pa.int64())).as_py() // 1000,
    "last_sealed_hour_ms": pc.max(hours).as_py() // 1000,
    "partition_{FROZEN}_behind_hours": round((others - oldest).total_seconds() / 3600, 2),
    "late": DeltaTable({str(lake / "late")!r}).scan(columns=["source_partition"]).read_all().num_rows,
}}))
"""
    figures = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if figures.returncode != 0:
        raise SystemExit(f"reading the lake failed:\n{figures.stderr[-3000:]}")
    lake_state = json.loads(figures.stdout.strip().splitlines()[-1])
    first_hour = lake_state["first_event_ms"] - lake_state["first_event_ms"] % HOUR_MS
    horizon = lake_state["last_sealed_hour_ms"] + HOUR_MS
    return {
        "records": lake_state["records"],
        "records_per_partition": lake_state["per_partition"],
        "partition_3_behind_hours": lake_state[f"partition_{FROZEN}_behind_hours"],
        "late": lake_state["late"],
        "first_hour": _iso(first_hour),
        "horizon": _iso(horizon),
    }


def _iso(epoch_ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch_ms // 1000))


def _run_measured(command: list[str], env: dict, log_file: Path) -> tuple[float, int]:
    """Run a job to completion; returns (wall seconds, peak RSS bytes of its process tree)."""
    started = time.monotonic()
    with log_file.open("w") as log:
        job = subprocess.Popen(command, env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        peak_rss = wait_sampling_peak_rss(job)
    if job.returncode != 0:
        raise SystemExit(f"{command[1]} failed ({job.returncode}); log {log_file}:\n" + log_file.read_text()[-3000:])
    return time.monotonic() - started, peak_rss


def _one_line(run: dict) -> str:
    return f"{run['records_produced']:,} records; " + "; ".join(
        f"backfill in {name} slices: {b['slices']} slices, {b['wall_seconds']} s, peak {b['peak_rss_megabytes']} MB"
        for name, b in run["backfill_by_slice"].items()
    )


def print_table(figures: dict) -> None:
    print(
        f"\noffline-device detector, backfill over {figures['hours']:g} h ({','.join(figures['profiles'])}), "
        f"partition {figures['frozen_partition']} persisted hours behind the others"
    )
    header = f"{'scale':>5} {'behind h':>8} {'slice':>5} {'records':>10} {'slices':>6} {'periods':>8} {'wall s':>7} {'rec/s':>7} {'peak RSS MB':>11}"
    print(header)
    print("-" * len(header))
    for run in figures["runs"]:
        for name, b in run["backfill_by_slice"].items():
            print(
                f"{run['scale']:>5g} {run['lake']['partition_3_behind_hours']:>8} {name:>5} {b['records']:>10,} {b['slices']:>6} "
                f"{b['periods_opened']:>8} {b['wall_seconds']:>7} {b['records_per_second'] or 0:>7} {b['peak_rss_megabytes']:>11}"
            )


if __name__ == "__main__":
    sys.exit(main())
