"""Faults of the world, not of tidemark (issue 25, section 3), against real brokers, Spark and Delta.

- Retention overtakes the live job: a frozen partition's next records are deleted
  (DeleteRecords) before the job reads them. The job never skips them: it stops naming the
  partition and the exact offsets, every later run (with its checkpoint, or resumed from the
  ledger without one) stops the same way, nothing past them is read, and the quality run
  reports them LOST with those offsets.
- The broker stops and restarts under a continuous persist job: on a broker of the test's own
  (never the session's), the job rides it out, and the lake holds every record exactly once.

Expected values are derived from what the test produced and deleted.
"""

from __future__ import annotations

import shutil
import time

import pytest

from harness.persist_job import (
    committed_versions,
    continuous_persist,
    produce,
    run_in_process,
    run_persist,
    telemetry_value,
    write_stream_config,
)

pytestmark = pytest.mark.integration

MINUTE_MS = 60_000


def _records(partition: int, first: int, count: int, now_ms: int) -> list:
    """``count`` records for ``partition``, one a second of event time, ending a minute ago."""
    start = now_ms - MINUTE_MS - 3_600_000
    return [(partition, telemetry_value(f"scooter-{partition}", start + i * 1_000), start + i * 1_000)
            for i in range(first, first + count)]  # fmt: skip


def _persist_failure(conf, log) -> str:
    """Run the persist job in this process, expecting it to fail; the failure's text."""
    from spark_jobs.persist import main

    try:
        code = run_in_process(main, ["--stream", "telemetry", "--conf", str(conf), "--mode", "available_now"], log)
    except Exception as error:  # the query's failure escapes the job's main()
        return str(error)
    raise AssertionError(f"the persist job exited {code} instead of failing")


def test_retention_overtaking_a_frozen_partition_stops_every_run_naming_the_lost_offsets(kafka_broker, spark, tmp_path):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    from expectations.quality_run import read_log_bounds, run_quality
    from expectations.quality_status import QualityStatus
    from tidemark.stream_config import load_stream

    topic = "world_retention"
    kafka_broker.create_topic(topic, 2)
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, 2)
    lake = tmp_path / "lake" / "telemetry"
    now_ms = int(time.time() * 1000)

    # Both partitions read to offset 40; then partition 1 is frozen while 60 more records arrive
    # on each: partition 0 reads on to 100, partition 1 stays at 40.
    produce(kafka_broker.bootstrap, topic, _records(0, 0, 40, now_ms) + _records(1, 0, 40, now_ms))
    run_persist(conf, "--mode", "available_now", log=tmp_path / "persist-1.log")
    produce(kafka_broker.bootstrap, topic, _records(0, 40, 60, now_ms) + _records(1, 40, 60, now_ms))
    run_persist(conf, "--mode", "available_now", log=tmp_path / "persist-2.log", environment={"TIDEMARK_CHAOS_FREEZE": "telemetry:1"})
    assert _ledger_ends(spark, lake) == {0: 100, 1: 40}

    # Retention overtakes it: offsets [40, 70) of partition 1 are deleted before they are read.
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})
    for future in admin.delete_records([TopicPartition(topic, 1, 70)]).values():
        assert future.result(30).low_watermark == 70
    versions_before = {table: committed_versions(lake / table) for table in ("events", "ledger", "seals")}

    lost = "partition 1: offsets [40, 70) (30 offsets) were deleted from the log before they were read"
    # The run stops in planning (its checkpoint says partition 1 reads next at 40), before a batch.
    first = _persist_failure(conf, tmp_path / "persist-3.log")
    assert lost in first, first
    # A later run has not moved past the loss either: without its checkpoint, it resumes from
    # the ledger, whose position is still 40, and stops the same way.
    shutil.rmtree(tmp_path / "checkpoints")
    assert lost in _persist_failure(conf, tmp_path / "persist-4.log")

    # Nothing was written by the failed runs, and nothing past the loss was read: partition 1
    # holds exactly offsets 0..39.
    assert {table: committed_versions(lake / table) for table in versions_before} == versions_before
    assert _ledger_ends(spark, lake) == {0: 100, 1: 40}
    offsets = spark.read.format("delta").load(str(lake / "events")).where("source_partition = 1").select("source_offset")
    assert sorted(row.source_offset for row in offsets.collect()) == list(range(40))

    # The quality run (stream-wide checks only) reports them LOST, with those offsets.
    stream = load_stream(conf, "telemetry")
    result = run_quality(spark, stream, [], read_log_bounds(stream), int(time.time() * 1000),
                         tmp_path / "reports", tmp_path / "gx", "retention-1")  # fmt: skip
    partition_1 = result.partition(1)
    assert partition_1.status is QualityStatus.LOST
    assert [(r.start, r.end) for r in partition_1.lost] == [(40, 70)]
    assert result.partition(0).status is not QualityStatus.LOST


def _ledger_ends(spark, lake) -> dict[int, int]:
    rows = spark.read.format("delta").load(str(lake / "ledger")).groupBy("source_partition").max("end_offset").collect()
    return {row[0]: row[1] for row in rows}
