"""Aligned slices vs Spark's global watermark, side by side on the same skewed backlog.

    .venv/bin/python benchmarks/alignment_side_by_side.py [--scale 1|4] [--max-records-per-batch 50000]
        [--runs aligned,unaligned,spark] [--hours 6] [--transaction-size N] [--results PATH]

Starts its own broker (temporary state, free loopback port) and produces one backlog with the
data generator: --hours simulated hours ending an hour ago on the hour, partition 0 `slow` (one
record an hour), partitions 1-3 `heavy` (18,000 an hour; --scale multiplies them through
--rate-scale); with --transaction-size, by a transactional producer committing every N records. Then three runs read the SAME topic, one after the other (never two Spark jobs at
once), each with its own lake and checkpoints and the same read budget per batch:

    aligned    (a) the persist job, aligned slices: a batch admits from every partition only
               records with log timestamp < G + max_drift
    unaligned  (b) the persist job with --no-alignment: record-count slices only
    spark      (c) Spark's built-in Kafka source, maxOffsetsPerTrigger = the budget, one global
               watermark (max event time seen − allowed lateness) and a 5-minute windowed count
               in append mode (benchmarks/spark_kafka_watermark.py)

Figures per run:

- spread per batch: over the partitions that admitted records in the batch, max − min of each
  partition's max admitted event time (minutes); the largest over all batches;
- records late (tidemark's `late` table) or dropped (Spark: produced − counted by the
  aggregation) per partition, partition 0 on its own;
- wall time of the job process (JVM start included) and peak resident memory of its process
  tree (JVM + Python workers), sampled every 0.5 s.

Targets for (a), printed PASS/FAIL: largest spread <= max_drift + max_out_of_orderness of the
stream (conf/streams.yaml), and no late record from partition 0.

Results are printed and written to benchmarks/results/alignment_side_by_side.json
(alignment_side_by_side_x4.json for --scale 4).
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
from benchmarks.spark_watermark_emulation import read_event_times, replay  # noqa: E402
from connectors.jars import ensure_jars, shared_jars_root  # noqa: E402
from stack.kafka_broker import KafkaBroker  # noqa: E402
from tidemark.event_time_text import format_optional_event_time  # noqa: E402
from tidemark.stream_config import load_stream  # noqa: E402

STREAM = "telemetry"
TOPIC = "bench_alignment"
PROFILES = ("slow", "heavy", "heavy", "heavy")
WINDOW_MS = 5 * 60_000  # run (c)'s tumbling window
MINUTE_MS = 60_000
RUNS = {
    "aligned": "(a) tidemark, aligned slices",
    "unaligned": "(b) tidemark, --no-alignment",
    "spark": "(c) Spark Kafka source + watermark",
}
RESULTS_DIR = REPO / "benchmarks" / "results"


def main() -> int:
    args = _parse_args()
    jars = shared_jars_root()
    ensure_jars(jars, ["kafka", "delta", "spark-kafka"])
    with _scratch_folder(args.scratch) as scratch:
        with scratch_broker(scratch, jars) as broker:
            figures = run_benchmark(broker, scratch, jars, args)
    results = args.results or RESULTS_DIR / (
        "alignment_side_by_side.json" if args.scale == 1 else f"alignment_side_by_side_x{args.scale:g}.json"
    )
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps(figures, indent=2) + "\n")
    print_table(figures)
    print(f"written to {results}")
    return 0


@contextlib.contextmanager
def _scratch_folder(kept: Path | None):
    if kept is None:
        with tempfile.TemporaryDirectory(prefix="tidemark-bench-align-") as scratch:
            yield Path(scratch)
    else:
        kept.mkdir(parents=True)  # a fresh folder: a second run must not read the first one's lake
        yield kept.resolve()


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1, help="--rate-scale of the heavy partitions (default 1)")
    parser.add_argument("--hours", type=float, default=6, help="simulated hours of backlog (default 6)")
    parser.add_argument(
        "--max-records-per-batch", type=int, default=50_000, help="read budget of every batch, all runs (default 50000)"
    )
    parser.add_argument(
        "--runs",
        default=",".join(RUNS),
        help=f"comma-separated subset of {','.join(RUNS)} (default: all, in that order)",
    )
    parser.add_argument(
        "--transaction-size", type=int, help="produce with a transactional producer committing every N records"
    )
    parser.add_argument("--results", type=Path, help="where to write the JSON (default: benchmarks/results/...)")
    parser.add_argument(
        "--scratch",
        type=Path,
        help="keep broker state, job logs and lakes in this new folder (default: a temporary one)",
    )
    args = parser.parse_args()
    args.runs = [name.strip() for name in args.runs.split(",")]
    unknown = [name for name in args.runs if name not in RUNS]
    if unknown:
        parser.error(f"--runs: unknown run {', '.join(unknown)}; choose from {', '.join(RUNS)}")
    return args


def run_benchmark(broker: KafkaBroker, scratch: Path, jars: Path, args: argparse.Namespace) -> dict:
    broker.create_topic(TOPIC, len(PROFILES))
    base_env = scratch_environment(broker.bootstrap, scratch, jars)
    backlog = _produce_backlog(base_env, args)
    produced = {p["partition"]: p["records"] for p in backlog["partitions"]}
    stream = load_stream(_bench_config(scratch / "streams.yaml", broker.bootstrap, scratch), STREAM)
    tolerances = stream.event_time
    target_spread_ms = tolerances.max_drift_ms + tolerances.max_out_of_orderness_ms

    runs = {}
    for name in args.runs:
        print(f"running {RUNS[name]} ...", file=sys.stderr, flush=True)
        if name == "spark":
            runs[name] = _spark_run(broker, scratch / name, base_env, args, tolerances.allowed_lateness_ms, produced)
        else:
            runs[name] = _tidemark_run(
                broker, scratch / name, base_env, args, list(produced), aligned=name == "aligned"
            )
        if not runs[name].get("skipped"):
            # A run that stops early has fewer chances to drop records; say so next to its figures.
            read = runs[name]["read_per_partition"]
            runs[name]["unread_per_partition"] = {str(p): n - read[str(p)] for p, n in produced.items()}
            runs[name]["unread_total"] = sum(runs[name]["unread_per_partition"].values())
        runs[name]["label"] = RUNS[name]
        print(f"  done: {_one_line(runs[name])}", file=sys.stderr, flush=True)

    figures = {
        "benchmark": "alignment_side_by_side",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
        "scale": args.scale,
        "max_records_per_batch": args.max_records_per_batch,
        "backlog": {
            "hours": args.hours,
            "window": [backlog["window_start"], backlog["window_end"]],
            "profiles": list(PROFILES),
            "records_per_partition": {str(p): n for p, n in produced.items()},
            "records": backlog["records"],
        },
        "tolerances": {
            "max_drift_minutes": tolerances.max_drift_ms / MINUTE_MS,
            "max_out_of_orderness_minutes": tolerances.max_out_of_orderness_ms / MINUTE_MS,
            "allowed_lateness_minutes": tolerances.allowed_lateness_ms / MINUTE_MS,
        },
        "runs": runs,
    }
    aligned = runs.get("aligned")
    if aligned and not aligned.get("skipped"):
        figures["targets"] = {
            "largest_spread_minutes": {
                "limit": target_spread_ms / MINUTE_MS,
                "value": aligned["largest_spread_minutes"],
                "result": "PASS" if aligned["largest_spread_minutes"] * MINUTE_MS <= target_spread_ms else "FAIL",
            },
            "partition_0_late": {
                "limit": 0,
                "value": aligned["lost_partition_0"],
                "result": "PASS" if aligned["lost_partition_0"] == 0 else "FAIL",
            },
        }
    return figures


def _produce_backlog(env: dict, args: argparse.Namespace) -> dict:
    # The backlog ends an hour ago on the hour, so no record is ahead of the future guard's limit.
    end = time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime(time.time() - 3600))
    print(
        f"producing {args.hours:g} h of {','.join(PROFILES)} at scale {args.scale:g} ...", file=sys.stderr, flush=True
    )
    produced = subprocess.run(
        [
            sys.executable,
            "-m",
            "generator",
            "--topic",
            TOPIC,
            "backlog",
            "--hours",
            f"{args.hours:g}",
            "--end",
            end,
            "--profiles",
            ",".join(PROFILES),
            "--rate-scale",
            f"{args.scale:g}",
            *(["--transaction-size", str(args.transaction_size)] if args.transaction_size else []),
        ],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    if produced.returncode != 0:
        raise SystemExit(f"the generator failed ({produced.returncode}):\n{produced.stderr[-3000:]}")
    return json.loads(produced.stdout.strip().splitlines()[-1])


def _bench_config(path: Path, bootstrap: str, run_dir: Path) -> Path:
    """The stream's configuration with the benchmark's topic, broker and this run's own lake."""
    import yaml

    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    stream = document["streams"][STREAM]
    stream["source"].update(topic=TOPIC, bootstrap_servers=bootstrap)
    stream["lake"].update(root=str(run_dir / "lake"), checkpoint_root=str(run_dir / "checkpoints"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document))
    return path


# ---------------------------------------------------------------------------------------------
# (a) and (b): the persist job


def _tidemark_run(
    broker: KafkaBroker, run_dir: Path, env: dict, args: argparse.Namespace, partitions: list[int], aligned: bool
) -> dict:
    persist = REPO / "spark_jobs" / "persist" / "job.py"
    if not aligned and "--no-alignment" not in persist.read_text():
        return {"skipped": "spark_jobs/persist/job.py has no --no-alignment flag yet"}
    conf = _bench_config(run_dir / "streams.yaml", broker.bootstrap, run_dir)
    command = [
        sys.executable,
        str(persist),
        "--stream",
        STREAM,
        "--conf",
        str(conf),
        "--mode",
        "available_now",
        "--max-records-per-batch",
        str(args.max_records_per_batch),
    ]
    if not aligned:
        command.append("--no-alignment")
    wall_s, peak_rss = _run_measured(command, env, run_dir / "job.log")

    figures = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "tidemark_lake_figures.py"),
            "--lake",
            str(run_dir / "lake"),
            "--stream",
            STREAM,
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    if figures.returncode != 0:
        raise SystemExit(f"reading the lake of {run_dir.name} failed:\n{figures.stderr[-3000:]}")
    lake = json.loads(figures.stdout.strip().splitlines()[-1])

    admitted = [row for row in lake["ledger"] if row["records"] + row.get("late", 0) > 0]
    per_batch: dict[int, dict[int, int]] = {}
    records_per_batch: dict[int, int] = {}
    for row in admitted:
        per_batch.setdefault(row["step_id"], {})[row["source_partition"]] = row["max_event_time_ms"]
        records_per_batch[row["step_id"]] = (
            records_per_batch.get(row["step_id"], 0) + row["records"] + row.get("late", 0)
        )
    read = {p: 0 for p in partitions}
    for row in lake["ledger"]:
        read[row["source_partition"]] += row["records"] + row["quarantined"] + row.get("late", 0)
    lost = {int(p): n for p, n in lake["late_per_partition"].items()}
    return {
        **_spread_figures(per_batch, records_per_batch),
        "read_per_partition": {str(p): n for p, n in read.items()},
        "lost_kind": "late (tidemark late table)",
        **_lost_figures(lost, partitions),
        "late_in_ledger": sum(row.get("late", 0) for row in lake["ledger"]),
        "persisted": sum(row["records"] for row in lake["ledger"]),
        "quarantined": sum(row["quarantined"] for row in lake["ledger"]),
        "slicing": _tally(row.get("slicing") for row in admitted),
        "wall_seconds": round(wall_s, 1),
        "peak_rss_megabytes": round(peak_rss / 1e6),
    }


# ---------------------------------------------------------------------------------------------
# (c): Spark's Kafka source and global watermark


def _spark_run(
    broker: KafkaBroker, run_dir: Path, env: dict, args: argparse.Namespace, lateness_ms: int, produced: dict[int, int]
) -> dict:
    run_dir.mkdir(parents=True)
    report_path = run_dir / "report.json"
    command = [
        sys.executable,
        str(REPO / "benchmarks" / "spark_kafka_watermark.py"),
        "--bootstrap",
        broker.bootstrap,
        "--topic",
        TOPIC,
        "--partitions",
        str(len(produced)),
        "--max-offsets-per-trigger",
        str(args.max_records_per_batch),
        "--checkpoint",
        str(run_dir / "checkpoint"),
        "--report",
        str(report_path),
        "--allowed-lateness-ms",
        str(lateness_ms),
        "--window-ms",
        str(WINDOW_MS),
    ]
    wall_s, peak_rss = _run_measured(command, env, run_dir / "job.log")
    report = json.loads(report_path.read_text())

    batches = [b for b in report["batches"] if b["rows"] > 0]
    per_batch = {b["batch_id"]: {int(p): t for p, t in b["max_event_time_ms"].items()} for b in batches}
    records_per_batch = {b["batch_id"]: b["rows"] for b in batches}
    counted = {p: report["emitted_per_partition"][str(p)] + report["pending_per_partition"][str(p)] for p in produced}
    dropped = {p: produced[p] - counted[p] for p in produced}
    read = {p: sum(b["rows_per_partition"][str(p)] for b in batches) for p in produced}

    # The replay explains the real figure: it must give the same drops, batch by batch watermarks.
    replayed = replay(
        report["batches"], read_event_times(broker.bootstrap, TOPIC, list(produced)), lateness_ms, WINDOW_MS
    )
    replayed_dropped = {p: sum(b.dropped.get(p, 0) for b in replayed) for p in produced}
    watermarks_agree = all(
        r.watermark_ms == b["watermark_ms"]
        for r, b in zip(replayed, sorted(report["batches"], key=lambda b: b["batch_id"]))
    )
    return {
        **_spread_figures(per_batch, records_per_batch),
        "lost_kind": "dropped by the watermark (produced - counted by the aggregation)",
        **_lost_figures(dropped, produced),
        "read_per_partition": {str(p): n for p, n in read.items()},
        "counted_per_partition": {str(p): n for p, n in counted.items()},
        "counted_still_in_state_per_partition": report["pending_per_partition"],
        "unparsed": sum(b["unparsed"] for b in batches),
        "spark_rows_dropped_by_watermark_metric": sum(
            b["spark_rows_dropped_by_watermark"] or 0 for b in report["batches"]
        ),
        "watermark_per_batch": [
            {
                "batch_id": r.batch_id,
                "watermark": format_optional_event_time(r.watermark_ms),
                "late_cutoff": format_optional_event_time(r.late_cutoff_ms),
                "rows": b["rows"],
                "dropped_replayed": r.dropped,
            }
            for r, b in zip(replayed, sorted(report["batches"], key=lambda b: b["batch_id"]))
        ],
        "replay": {
            "dropped_per_partition": {str(p): n for p, n in replayed_dropped.items()},
            "agrees_with_spark": replayed_dropped == dropped and watermarks_agree,
            "watermarks_agree": watermarks_agree,
        },
        "query_seconds": report["query_seconds"],
        "wall_seconds": round(wall_s, 1),
        "peak_rss_megabytes": round(peak_rss / 1e6),
    }


# ---------------------------------------------------------------------------------------------
# figures shared by all runs


def _spread_figures(per_batch: dict[int, dict[int, int]], records_per_batch: dict[int, int]) -> dict:
    """per_batch: batch id -> {partition: max admitted event time (ms)}, admitting partitions only;
    records_per_batch: batch id -> records admitted."""
    spreads = []
    for batch_id in sorted(per_batch):
        maxima = per_batch[batch_id]
        spreads.append(
            {
                "batch_id": batch_id,
                "records": records_per_batch[batch_id],
                "spread_minutes": round((max(maxima.values()) - min(maxima.values())) / MINUTE_MS, 2),
                "max_event_time": {str(p): format_optional_event_time(t) for p, t in sorted(maxima.items())},
            }
        )
    return {
        "batches": len(spreads),
        "largest_spread_minutes": max((s["spread_minutes"] for s in spreads), default=0.0),
        "spread_per_batch": spreads,
    }


def _lost_figures(lost: dict[int, int], partitions) -> dict:
    """Records late or dropped per partition; partitions that lost none show 0."""
    return {
        "lost_partition_0": lost.get(0, 0),
        "lost_per_partition": {str(p): lost.get(p, 0) for p in sorted(partitions)},
        "lost_total": sum(lost.values()),
    }


def _tally(values) -> dict:
    counts: dict[str, int] = {}
    for value in values:
        counts[str(value)] = counts.get(str(value), 0) + 1
    return counts


def _run_measured(command: list[str], env: dict, log_file: Path) -> tuple[float, int]:
    """Run a job to completion; returns (wall seconds, peak RSS bytes of its process tree)."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with log_file.open("w") as log:
        job = subprocess.Popen(command, env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        peak_rss = wait_sampling_peak_rss(job)
    wall_s = time.monotonic() - started
    if job.returncode != 0:
        raise SystemExit(f"{command[1]} failed ({job.returncode}); log {log_file}:\n" + log_file.read_text()[-3000:])
    return wall_s, peak_rss


def _one_line(run: dict) -> str:
    if run.get("skipped"):
        return f"skipped: {run['skipped']}"
    return (
        f"{run['batches']} batches, largest spread {run['largest_spread_minutes']:.1f} min, "
        f"lost {run['lost_total']} (partition 0: {run['lost_partition_0']}), unread {run['unread_total']}, "
        f"{run['wall_seconds']} s, "
        f"{run['peak_rss_megabytes']} MB"
    )


def print_table(figures: dict) -> None:
    backlog = figures["backlog"]
    per_partition = ", ".join(f"p{p} {n:,}" for p, n in backlog["records_per_partition"].items())
    print(
        f"\nscale {figures['scale']:g}: {backlog['records']:,} records over {backlog['hours']:g} h ({per_partition}); "
        f"{figures['max_records_per_batch']:,} records per batch"
    )
    header = (
        f"{'run':<36} {'batches':>7} {'spread max':>10} {'lost p0':>7} {'lost per partition':>28} {'unread':>7} "
        f"{'wall s':>7} {'RSS MB':>7}"
    )
    print(header)
    print("-" * len(header))
    for run in figures["runs"].values():
        if run.get("skipped"):
            print(f"{run['label']:<36} skipped: {run['skipped']}")
            continue
        lost = "/".join(str(n) for n in run["lost_per_partition"].values()) + f" (total {run['lost_total']})"
        print(
            f"{run['label']:<36} {run['batches']:>7} {run['largest_spread_minutes']:>6.1f} min {run['lost_partition_0']:>7} "
            f"{lost:>28} {run['unread_total']:>7} {run['wall_seconds']:>7} {run['peak_rss_megabytes']:>7}"
        )
    spark = figures["runs"].get("spark")
    if spark and not spark.get("skipped"):
        print(
            f"(c) lost = produced - counted by Spark's aggregation; the replay of Spark's watermark "
            f"{'agrees' if spark['replay']['agrees_with_spark'] else 'DISAGREES'} "
            f"({'/'.join(str(n) for n in spark['replay']['dropped_per_partition'].values())})"
        )
    for run in figures["runs"].values():
        if not run.get("skipped") and run["unread_total"]:
            unread = "/".join(str(n) for n in run["unread_per_partition"].values())
            print(f"NOTE {run['label']} stopped with records it never read (per partition {unread})")
    for name, target in figures.get("targets", {}).items():
        print(f"target (a) {name}: {target['value']} <= {target['limit']:g}: {target['result']}")


if __name__ == "__main__":
    sys.exit(main())
