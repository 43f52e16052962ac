"""What the sweep costs (and what reading the Delta log costs a scheduled run): 7 days of the demo stream.

    flock /tmp/tidemark-heavy.lock .venv/bin/python benchmarks/quality_sweep.py [--days 7] [--batches-per-hour 12]

Synthesises what `make demo`'s stream leaves after ``--days`` days of the persist DAG's 5-minute
runs, straight into Delta tables under a temporary folder: the four demo profiles (steady 720
records an hour, slow 1, heavy 18,000, bursty 1,800: 20,521 an hour), one live ledger range per
partition and batch, about one events file per hour partition and batch (the persist job writes
one per batch), every hour sealed. Then, in one Spark session:

- the sweep as the sweep DAG runs it: the files-missing check of events, late and quarantine,
  then expectations.quality_run.run_quality(sweep=True) over every sealed hour within the
  stream's retention; twice (the first run pays the JVM's and GX's warm-up);
- what reading the Delta log adds to a scheduled run: ``--batches-per-hour`` small commits to each
  of events, late and quarantine (an hour of persist batches), then
  expectations.damage_scan.find_damage over them (no damage: no hour re-checked), and the same
  after one DELETE of three rows (one hour sent back).

Every partition must come out OK in the sweep, and the DELETE must be found, else the benchmark
fails rather than report the time of a run that checked nothing. Prints the figures and writes
benchmarks/results/quality_sweep.json.
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

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


from benchmarks.scratch_environment import benchmark_spark_session, scratch_stream_config  # noqa: E402

HOUR_MS = 3_600_000
MINUTE_MS = 60_000
RESULTS = REPO / "benchmarks" / "results" / "quality_sweep.json"
# The demo's profiles (generator/profiles.py) per partition: records an hour.
DEMO_RATES = (720, 1, 18_000, 1_800)


class Bounds:
    def __init__(self, earliest: int, end: int):
        self.earliest, self.end = earliest, end


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument(
        "--batches-per-hour", type=int, default=12, help="persist runs an hour (the demo: every 5 minutes)"
    )
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()

    spark = benchmark_spark_session("tidemark-bench-sweep")
    with tempfile.TemporaryDirectory(prefix="tidemark-bench-sweep-") as scratch:
        figures = run(spark, Path(scratch), args.days, args.batches_per_hour)
    spark.stop()
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    return 0


def run(spark, scratch: Path, days: int, batches: int) -> dict:
    from expectations.damage_scan import find_damage, remember_checked, sweep_damage, sweep_hours
    from expectations.lake_facts import SparkLakeFacts
    from expectations.quality_run import run_quality
    from tidemark.event_time_text import parse_event_time
    from tidemark.stream_config import load_stream

    stream = load_stream(scratch_stream_config(scratch), "telemetry")
    first_hour = parse_event_time("2026-11-15T00:00:00Z")
    hours = [first_hour + i * HOUR_MS for i in range(days * 24)]
    now_ms = hours[-1] + HOUR_MS + 15 * MINUTE_MS  # the newest hour sealed 11 minutes after its end
    started = time.monotonic()
    ends = _synthesise(spark, stream, hours, now_ms, batches)
    synthesised_s = time.monotonic() - started
    events_files = len(spark.read.format("delta").load(stream.table_path("events")).inputFiles())
    read = lambda table: spark.read.format("delta").load(stream.table_path(table))  # noqa: E731
    bounds = {p: Bounds(0, end) for p, end in ends.items()}
    reports, gx = scratch / "reports", scratch / "gx"

    sweeps = []
    for attempt in (1, 2):
        t0 = time.monotonic()
        from expectations.checked_hours import seals_by_hour

        swept = sweep_hours(seals_by_hour(read("seals")), now_ms, stream.retention_ms)
        t1 = time.monotonic()
        missing = sweep_damage(SparkLakeFacts(spark, stream), stream, swept)
        t2 = time.monotonic()
        result = run_quality(
            SparkLakeFacts(spark, stream), stream, swept, bounds, now_ms, reports, gx, f"sweep-{attempt}", sweep=True
        )
        t3 = time.monotonic()
        statuses = {p.partition: p.status.value for p in result.partitions}
        if missing or set(statuses.values()) != {"OK"} or len(swept) != len(hours):
            raise SystemExit(
                f"the sweep found something in a clean lake: {statuses}, missing files {missing}, {len(swept)} hours"
            )
        persisted = sum(f.persisted for f in result.hours)
        if persisted != sum(DEMO_RATES) * len(hours):
            raise SystemExit(
                f"the sweep counted {persisted} persisted records, the lake holds {sum(DEMO_RATES) * len(hours)}"
            )
        sweeps.append(
            {
                "wall_s": round(t3 - t0, 2),
                "seals_s": round(t1 - t0, 2),
                "files_missing_check_s": round(t2 - t1, 2),
                "run_quality_s": round(t3 - t2, 2),
                "stage_seconds": {k: round(v, 2) for k, v in result.stage_seconds},
                "gx_seconds": {c.name: round(c.gx_seconds, 2) for c in result.checks if c.ran},
            }
        )

    # A scheduled run's log reading: remember the versions, then an hour of persist commits.
    sealed = {h: None for h in hours}
    remember_checked(
        reports, stream.name, find_damage(SparkLakeFacts(spark, stream), stream, reports, sealed), "state", now_ms
    )
    _append_batches(spark, stream, hours[-1] + HOUR_MS, batches)
    t0 = time.monotonic()
    quiet = find_damage(SparkLakeFacts(spark, stream), stream, reports, sealed)
    quiet_s = time.monotonic() - t0
    if quiet.damage or quiet.commits_read != 3 * batches:
        raise SystemExit(f"an hour of appends read as damage or not read: {quiet}")
    remember_checked(reports, stream.name, quiet, "quiet", now_ms)

    from delta.tables import DeltaTable

    target = hours[len(hours) // 2]
    DeltaTable.forPath(spark, stream.table_path("events")).delete(
        f"source_partition = 0 AND source_offset IN ({_offset_in_hour(hours, target)}, {_offset_in_hour(hours, target) + 1}, "
        f"{_offset_in_hour(hours, target) + 2})"
    )
    t0 = time.monotonic()
    damaged = find_damage(SparkLakeFacts(spark, stream), stream, reports, sealed)
    damaged_s = time.monotonic() - t0
    if [(d.operation, d.rows, d.hours_ms) for d in damaged.damage] != [("DELETE", 3, (target,))]:
        raise SystemExit(f"the DELETE was not found as it happened: {damaged.damage}")

    per_hour = sum(DEMO_RATES)
    return {
        "benchmark": "quality_sweep",
        "stream": "the demo stream (profiles steady, slow, heavy, bursty: records an hour per partition)",
        "records_per_hour_per_partition": list(DEMO_RATES),
        "days": days,
        "hours_swept": len(hours),
        "records": per_hour * len(hours),
        "ledger_rows": len(DEMO_RATES) * batches * len(hours),
        "events_files": events_files,
        "synthesise_s": round(synthesised_s, 1),
        "sweep_runs": sweeps,
        "scheduled_run_log_reading": {
            "commits_read": quiet.commits_read,
            "no_damage_s": round(quiet_s, 2),
            "one_delete_s": round(damaged_s, 2),
            "delete_found": damaged.damage[0].sentence(),
        },
        "cores": os.cpu_count(),
        "machine": platform.platform(),
        "note": "wall times in seconds in one Spark session (local[*]); the first sweep pays the JVM's and GX's "
        "warm-up, the second is what a long-lived worker pays; a spark-submit of the sweep adds the JVM start",
    }


def _offset_in_hour(hours: list[int], hour: int) -> int:
    """Partition 0's first offset of ``hour`` (its offsets are contiguous, DEMO_RATES[0] an hour)."""
    return hours.index(hour) * DEMO_RATES[0]


def _synthesise(spark, stream, hours: list[int], now_ms: int, batches: int) -> dict[int, int]:
    """Events, ledger and seals of ``hours``; returns each partition's end offset.

    Partition p holds DEMO_RATES[p] records an hour at contiguous offsets, spread evenly over the
    hour; batch b of an hour holds the records of its slice [b/batches, (b+1)/batches) of the hour."""
    from datetime import datetime

    from pyspark.sql import functions as F

    from spark_jobs.lake.tables import LakeTables
    from tidemark.table_schemas import LEDGER_COLUMNS, SEALS_COLUMNS, ddl, events_columns

    LakeTables(spark, stream).ensure()

    def at(ms):
        return datetime.fromtimestamp(ms / 1000, tz=UTC)

    first, count = hours[0], len(hours)
    frames = []
    for partition, rate in enumerate(DEMO_RATES):
        ids = spark.range(rate * count)
        hour_index = F.floor(F.col("id") / rate)
        within = F.col("id") % rate
        event_ms = F.lit(first) + hour_index * HOUR_MS + F.floor(within * HOUR_MS / rate)
        frames.append(
            ids.select(
                F.lit(partition).alias("p"),
                F.col("id").alias("o"),
                event_ms.cast("long").alias("ms"),
                F.floor(within * batches / rate).cast("int").alias("slot"),
            )
        )
    rows = frames[0].unionByName(frames[1]).unionByName(frames[2]).unionByName(frames[3])
    event_time = F.timestamp_millis(F.col("ms"))
    generated = {
        "source_partition": F.col("p").cast("int"),
        "source_offset": F.col("o").cast("long"),
        "log_timestamp": event_time,
        "event_time": event_time,
        "record_key": F.encode(F.concat(F.lit("scooter-"), (F.col("o") % 50).cast("string")), "UTF-8"),
        "record_headers": F.lit(None),
        "device_id": F.concat(F.lit("scooter-"), (F.col("o") % 50).cast("string")),
        "lat": F.lit(52.37),
        "lon": F.lit(4.89),
        "battery": (F.col("o") % 100).cast("int"),
        "step_id": F.col("slot").cast("long"),
        "event_date": F.to_date(event_time),
        "event_hour": F.hour(event_time),
    }
    columns = events_columns(stream.payload)
    spark.conf.set("spark.sql.shuffle.partitions", str(count * batches))
    events = rows.select(*[generated[name].cast(sql_type).alias(name) for name, sql_type in columns], "slot")
    (
        events.repartition(count * batches, "event_date", "event_hour", "slot")
        .drop("slot")
        .write.format("delta")
        .mode("append")
        .save(stream.table_path("events"))
    )
    spark.conf.set("spark.sql.shuffle.partitions", os.environ.get("TIDEMARK_SHUFFLE_PARTITIONS", "4"))

    ledger, seals = [], []
    for index, hour in enumerate(hours):
        for slot in range(batches):
            batch_id = index * batches + slot
            read_ms = hour + (slot + 1) * HOUR_MS // batches + 30_000
            for partition, rate in enumerate(DEMO_RATES):
                # The hour's records i with floor(i * batches / rate) == slot.
                low, high = min(-(-slot * rate // batches), rate), min(-(-(slot + 1) * rate // batches), rate)
                start, end = index * rate + low, index * rate + high
                times = [hour + i * HOUR_MS // rate for i in (low, high - 1)] if high > low else []
                ledger.append(
                    tuple(
                        {
                            "stream": stream.name,
                            "batch_id": batch_id,
                            "source_partition": partition,
                            "mode": "live",
                            "start_offset": start,
                            "end_offset": end,
                            "log_end_offset": end,
                            "records": end - start,
                            "quarantined": 0,
                            "late": 0,
                            "data_records": end - start,
                            "min_event_time": at(times[0]) if times else None,
                            "max_event_time": at(times[-1]) if times else None,
                            "partition_watermark": at(read_ms - 60_000),
                            "global_watermark": at(read_ms - 90_000),
                            "partition_status": "ACTIVE",
                            "slicing": "event_time",
                            "read_time": at(read_ms),
                            "held_by_open_transaction": False,
                        }.get(name)
                        for name, _ in LEDGER_COLUMNS
                    )
                )
        seals.append(
            tuple(
                {
                    "stream": stream.name,
                    "hour": at(hour),
                    "sealed_at": at(hour + HOUR_MS + 11 * MINUTE_MS),
                    "global_watermark": at(hour + HOUR_MS + 10 * MINUTE_MS),
                    "batch_id": index,
                }.get(name)
                for name, _ in SEALS_COLUMNS
            )
        )
    spark.createDataFrame(ledger, ddl(LEDGER_COLUMNS)).write.format("delta").mode("append").save(
        stream.table_path("ledger")
    )
    spark.createDataFrame(seals, ddl(SEALS_COLUMNS)).write.format("delta").mode("append").save(
        stream.table_path("seals")
    )
    return {partition: rate * count for partition, rate in enumerate(DEMO_RATES)}


def _append_batches(spark, stream, hour: int, batches: int) -> None:
    """``batches`` small appends to events, late and quarantine, as an hour of persist runs makes."""
    from datetime import datetime

    from tidemark.table_schemas import QUARANTINE_COLUMNS, ddl, events_columns, late_columns

    moment = datetime.fromtimestamp(hour / 1000, tz=UTC)
    record = {
        "source_partition": 0,
        "source_offset": 10**9,
        "log_timestamp": moment,
        "event_time": moment,
        "record_key": b"k",
        "record_headers": None,
        "device_id": "x",
        "lat": 1.0,
        "lon": 1.0,
        "battery": 1,
        "batch_id": 0,
        "event_date": moment.date(),
        "event_hour": moment.hour,
        "global_watermark": moment,
        "raw_value": b"{",
        "reason": "malformed_json",
        "detail": "x",
        "read_time": moment,
    }
    for number in range(batches):
        for table, columns in (
            ("events", events_columns(stream.payload)),
            ("late", late_columns(stream.payload)),
            ("quarantine", QUARANTINE_COLUMNS),
        ):
            row = {**record, "source_offset": 10**9 + number}
            frame = spark.createDataFrame([tuple(row.get(name) for name, _ in columns)], ddl(columns))
            frame.write.format("delta").mode("append").save(stream.table_path(table))


if __name__ == "__main__":
    sys.exit(main())
