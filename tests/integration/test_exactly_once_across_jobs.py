"""Exactly-once across jobs, not only within one: the live job and recovery runs may touch the
same offsets, and the lake must hold each (partition, offset) once. Real broker, the jobs run
as spark-submit runs them (in the test's process), Delta read back by the test. A crash at each
commit of a batch, with the checkpoint kept or lost, is tests/integration/test_crash_points.py.
"""

from __future__ import annotations

import json
import time
from collections import Counter

import pytest
from pyspark.sql import functions as F

from harness.log_layouts import lake_offsets
from harness.persist_job import (
    batches_persisted,
    produce,
    run_persist,
    run_recover,
    telemetry_value,
    write_stream_config,
)
from tidemark.persist_run_summary import PersistRunSummary

pytestmark = pytest.mark.integration

HOUR_MS = 3_600_000


def _records(now_ms: int, partitions: int, per_partition: int) -> list[tuple[int, bytes, int]]:
    """``per_partition`` records per partition, event times rising over the last two hours."""
    records = []
    for i in range(per_partition):
        event_ms = now_ms - 2 * HOUR_MS + i * (2 * HOUR_MS) // per_partition
        records.extend((p, telemetry_value(f"scooter-{p}-{i % 5}", event_ms), event_ms) for p in range(partitions))
    return records


def _expected(counts: dict[int, int]) -> set[tuple[int, int]]:
    return {(p, o) for p, n in counts.items() for o in range(n)}


def _assert_exactly(spark, lake, expected: set[tuple[int, int]]) -> None:
    found = lake_offsets(spark, lake)
    duplicated = {key: n for key, n in Counter(found).items() if n > 1}
    assert duplicated == {}, f"{len(duplicated)} (partition, offset) pairs persisted more than once"
    assert set(found) == expected


def _backlog(kafka_broker, tmp_path, topic: str, partitions: int, per_partition: int, budget: int, now_ms: int):
    """A topic holding ``per_partition`` records a partition (event times over the two hours
    before ``now_ms``) and a stream config reading it with row budget ``budget``: (records
    produced per partition, the config's path, the stream's lake folder)."""
    kafka_broker.create_topic(topic, partitions)
    counts = produce(kafka_broker.bootstrap, topic, _records(now_ms, partitions, per_partition))
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, partitions, max_records_per_batch=budget)
    return counts, conf, tmp_path / "lake" / "telemetry"


def test_recovery_and_live_never_duplicate_and_offsets_past_retention_are_reported_lost(kafka_broker, spark, tmp_path):
    topic = "recovery_and_live"
    now_ms = int(time.time() * 1000)
    counts, conf, lake = _backlog(
        kafka_broker, tmp_path, topic, partitions=2, per_partition=300, budget=200, now_ms=now_ms
    )

    # Recovery first: partition 1's offsets [100, 250) before the live job ever ran.
    assert run_recover(conf, 1, "100-250", log=tmp_path / "recover1.log", result=tmp_path / "recover1.json") == 0
    first = json.loads((tmp_path / "recover1.json").read_text())
    assert (first["inserted"], first["lost"]) == (150, [])
    assert set(lake_offsets(spark, lake)) == {(1, o) for o in range(100, 250)}

    # Then the live job reads everything and leaves out exactly the offsets recovery claimed,
    # partition 1's [100, 250): every batch is a plain append of the rest, none insert-only.
    run_persist(
        conf, "--mode", "available_now", "--run-summary", str(tmp_path / "live.json"), log=tmp_path / "live.log"
    )
    _assert_exactly(spark, lake, _expected(counts))
    live_ranges = (
        spark.read.format("delta").load(str(lake / "ledger")).where("mode = 'live' AND source_partition = 1").collect()
    )
    left_out, expected_left_out = [], []
    for batch in batches_persisted(tmp_path / "live.log"):
        first, last = batch["step_ids"]
        ranges = [
            (r.start_offset, r.end_offset)
            for r in live_ranges
            if first <= r.step_id <= last and r.end_offset > r.start_offset
        ]
        left_out.append(batch.get("left_out", {}))
        overlap = [[max(100, start), min(250, end)] for start, end in sorted(ranges) if start < 250 and 100 < end]
        merged = [[overlap[0][0], overlap[-1][1]]] if overlap else []  # one batch's steps are contiguous
        expected_left_out.append({"1": merged} if merged else {})
        assert "insert_only" not in batch
    assert left_out == expected_left_out and {} in left_out and len(set(map(str, left_out))) > 1, (
        left_out,
        expected_left_out,
    )
    assert PersistRunSummary.read(tmp_path / "live.json").insert_only_batches == 0

    # Live first, then recovery: of partition 0's 300 offsets, only the 20 deleted from events
    # (a hole) are inserted again; the other 280 are skipped.
    spark.sql(f"DELETE FROM delta.`{lake / 'events'}` WHERE source_partition = 0 AND source_offset BETWEEN 40 AND 59")
    assert run_recover(conf, 0, "0-300", log=tmp_path / "recover2.log", result=tmp_path / "recover2.json") == 0
    assert json.loads((tmp_path / "recover2.json").read_text())["inserted"] == 20
    _assert_exactly(spark, lake, _expected(counts))
    ledger = spark.read.format("delta").load(str(lake / "ledger"))
    assert {row.mode for row in ledger.select("mode").distinct().collect()} == {"live", "recovery"}
    recovered_rows = (
        ledger.where(F.col("mode") == "recovery").where("source_partition = 0").agg(F.sum("data_records")).first()[0]
    )
    assert recovered_rows == 300  # the recovery run of partition 0 read all 300 of its records
    # Read to its end, the recovery under live's G stops: no batch that reads nothing (its G is
    # pinned, so a batch to move G was planned again every trigger until the partition idled).
    recovery = ledger.where((F.col("mode") == "recovery") & (F.col("source_partition") == 0))
    empty = recovery.where(F.col("end_offset") == F.col("start_offset")).count()
    assert empty == 0, f"{empty} ledger rows of recovery batches that read nothing"

    # Retention: rows [0, 50) of partition 1 go missing from the lake, then offsets [0, 30) of
    # partition 1 leave the log (DeleteRecords moves the earliest offset, as retention does).
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    spark.sql(f"DELETE FROM delta.`{lake / 'events'}` WHERE source_partition = 1 AND source_offset < 50")
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})
    for future in admin.delete_records([TopicPartition(topic, 1, 30)]).values():
        future.result(30)
    events_before = spark.read.format("delta").load(str(lake / "events")).count()

    code = run_recover(conf, 1, "0-300", log=tmp_path / "recover3.log", result=tmp_path / "recover3.json")

    assert code == 3, "lost offsets must fail the run loudly"
    result = json.loads((tmp_path / "recover3.json").read_text())
    assert result["lost"] == [[0, 30]]
    assert result["inserted"] == 20  # [30, 50): what the log still held was recovered, nothing else
    assert "offsets_lost" in (tmp_path / "recover3.log").read_text()
    _assert_exactly(spark, lake, _expected(counts) - {(1, o) for o in range(30)})
    assert spark.read.format("delta").load(str(lake / "events")).count() == events_before + 20
