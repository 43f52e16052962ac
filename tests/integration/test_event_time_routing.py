"""Event time end to end: aligned catch-up of a skewed backlog, sealing, and late routing,
with the real broker, the persist job (run in the test's process, on its Spark), and Delta."""

from __future__ import annotations

import time

import pytest
from pyspark.sql import functions as F

from harness.persist_job import produce, run_persist, telemetry_value, write_stream_config

pytestmark = pytest.mark.integration

HOUR_MS = 3_600_000
MAX_DRIFT_MS = 15 * 60_000
BOUND_MS = 30_000
LATENESS_MS = 10 * 60_000


def test_skewed_catch_up_stays_aligned_seals_hours_and_routes_late_records(kafka_broker, spark, tmp_path):
    topic = "event_time_routing"
    kafka_broker.create_topic(topic, 3)
    end_ms = (int(time.time() * 1000) // HOUR_MS - 1) * HOUR_MS  # an hour ago, on the hour
    start_ms = end_ms - 4 * HOUR_MS
    slow = [(0, t) for t in range(start_ms + HOUR_MS // 2, end_ms, HOUR_MS)]  # one record an hour
    heavy = [(p, t) for t in range(start_ms, end_ms, 10_000) for p in (1, 2)]  # one per 10 s each
    produce(kafka_broker.bootstrap, topic, [(p, telemetry_value(f"scooter-{p}", t), t) for p, t in slow + heavy])
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, 3, max_records_per_batch=500)
    lake = tmp_path / "lake" / "telemetry"

    run_persist(
        conf, "--mode", "available_now", "--run-summary", str(tmp_path / "run1.json"), log=tmp_path / "run1.log"
    )

    ledger = spark.read.format("delta").load(str(lake / "ledger"))
    assert ledger.where("slicing != 'event_time'").count() == 0
    assert spark.read.format("delta").load(str(lake / "late")).count() == 0, "no record is late in an aligned catch-up"
    assert spark.read.format("delta").load(str(lake / "events")).count() == len(slow) + len(heavy)

    # The largest spread of admitted event time across partitions in any batch.
    per_batch = (
        ledger.where("records > 0")
        .groupBy("step_id")
        .agg(
            (F.max(F.col("max_event_time").cast("double")) - F.min(F.col("max_event_time").cast("double"))).alias(
                "spread_s"
            )
        )
    )
    largest_spread_ms = per_batch.agg(F.max("spread_s")).first()[0] * 1000
    assert largest_spread_ms <= MAX_DRIFT_MS + BOUND_MS

    # Partition watermarks never decrease from batch to batch.
    for partition in range(3):
        marks = [
            r.partition_watermark for r in ledger.where(f"source_partition = {partition}").orderBy("step_id").collect()
        ]
        marks = [m for m in marks if m is not None]
        assert marks == sorted(marks)

    # An hour H is sealed when G >= H + 1 h + 10 min. G ends 40 s before end_ms at the latest (the
    # heavy partitions' last record, 10 s before it, less the 30 s bound), or held by partition
    # 0's last record half an hour before it: either way the data's first three hours are sealed,
    # the fourth is not. The stream's first G (within the first step, before start + 10 min)
    # seals the hour before the first hour it leaves open, start - 2 h, not every hour before the
    # data one by one (tidemark.hour_sealer); the next step's G seals start - 1 h.
    sealed = [
        int(r.hour.timestamp() * 1000)
        for r in spark.read.format("delta").load(str(lake / "seals")).orderBy("hour").collect()
    ]
    assert sealed == [start_ms + k * HOUR_MS for k in range(-2, 3)], (
        "the catch-up seals the hours G has passed, once each"
    )

    # Partition 1 now delivers records from two hours ago: behind G - allowed lateness.
    old = [start_ms + HOUR_MS + i * 1_000 for i in range(25)]
    produce(kafka_broker.bootstrap, topic, [(1, telemetry_value("scooter-late", t), t) for t in old])
    run_persist(conf, "--mode", "available_now", log=tmp_path / "run2.log")

    late = spark.read.format("delta").load(str(lake / "late")).collect()
    assert sorted(int(r.event_time.timestamp() * 1000) for r in late) == old
    assert all(r.global_watermark.timestamp() * 1000 - LATENESS_MS > r.event_time.timestamp() * 1000 for r in late)
    assert spark.read.format("delta").load(str(lake / "events")).count() == len(slow) + len(heavy), (
        "late ones are not events"
    )
    late_in_ledger = ledger.sparkSession.read.format("delta").load(str(lake / "ledger")).agg(F.sum("late")).first()[0]
    assert late_in_ledger == len(old)
