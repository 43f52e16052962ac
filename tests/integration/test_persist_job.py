"""The persist job against a real Kafka broker, local Spark and Delta.

What must hold: every produced (partition, offset) lands exactly once in events or quarantine,
also when the job is killed with SIGKILL mid-run and restarted; bad records are quarantined with
a reason and their raw bytes; the ledger's ranges per partition are contiguous and account for
every record.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest
from delta.tables import DeltaTable
from pyspark.sql import functions as F

from harness.persist_job import (
    batches_persisted,
    committed_versions,
    continuous_persist,
    produce,
    run_persist,
    telemetry_value,
    write_stream_config,
)
from spark_jobs.lake.table_creation import CREATOR

pytestmark = pytest.mark.integration

HOUR_MS = 3_600_000


def _recent_ms(now_ms: int, index: int, count: int, span_ms: int = 2 * HOUR_MS) -> int:
    """The index-th of ``count`` event times rising evenly over the last two hours (so the future
    guard lets them through and each partition stays within its out-of-orderness bound)."""
    return now_ms - span_ms + index * span_ms // count


def test_bad_records_go_to_quarantine_with_reason_and_ledger_accounts_for_everything(kafka_broker, spark, tmp_path):
    topic = "persist_quarantine"
    kafka_broker.create_topic(topic, 2)
    now_ms = int(time.time() * 1000)
    good = [
        (i % 2, telemetry_value(f"scooter-{i % 7}", _recent_ms(now_ms, i, 40)), _recent_ms(now_ms, i, 40))
        for i in range(40)
    ]
    bad_values = {
        b"{not json": "malformed_json",
        # The poison pill: 30 KB of JSON nested 5,000 levels deep (under max_record_bytes).
        b'{"a":' * 5_000 + b"1" + b"}" * 5_000: "too_deeply_nested",
        b"[1, 2, 3]": "not_an_object",
        b'{"device_id": "s", "lat": 1.0, "lon": 2.0, "battery": 3}': "missing_event_time",
        b'{"device_id": "s", "event_time": "yesterday", "lat": 1.0, "lon": 2.0, "battery": 3}': "unparsable_event_time",
        b'{"device_id": "s", "event_time": "2026-01-01T00:00:00Z", "lat": 1.0, "lon": 2.0, "battery": "full"}': "wrong_type",
        b"": "empty_value",
        telemetry_value("s", now_ms + 365 * 24 * HOUR_MS): "future_event_time",
    }
    bad = [(1, value, now_ms) for value in bad_values]
    produced = produce(kafka_broker.bootstrap, topic, good + bad)
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, 2, max_records_per_batch=16)

    run_persist(conf, "--mode", "available_now", log=tmp_path / "persist.log")

    lake = tmp_path / "lake" / "telemetry"
    events = spark.read.format("delta").load(str(lake / "events"))
    quarantine = spark.read.format("delta").load(str(lake / "quarantine"))
    ledger = (
        spark.read.format("delta")
        .load(str(lake / "ledger"))
        .orderBy("source_partition", "start_offset", "end_offset")
        .collect()
    )

    assert events.count() == len(good)
    reasons = {bytes(row.raw_value): row.reason for row in quarantine.collect()}
    assert reasons == bad_values, "every bad record is quarantined once, raw bytes kept, with its reason"
    # Each detail names what was wrong with that record, for the person who reads the table.
    details = {row.reason: row.detail for row in quarantine.collect()}
    expected_details = {
        "malformed_json": "not valid JSON: ",
        "too_deeply_nested": "the JSON value is nested too deeply to decode",
        "not_an_object": "expected a JSON object, got a JSON array",
        "missing_event_time": "the event-time field 'event_time' is missing or null",
        "unparsable_event_time": "'event_time' must be an ISO-8601 time with a UTC offset, e.g. 2026-11-22T08:59:59.999Z; got \"yesterday\"",
        "wrong_type": "field 'battery' must be ",
        "empty_value": "the record has no value",
        "future_event_time": "ahead of the time it was read",
    }
    assert {reason: expected_details[reason] in detail for reason, detail in details.items()} == dict.fromkeys(
        expected_details, True
    ), details

    # The ledger: one row per batch and partition, ranges contiguous from 0 to the log end, and
    # each range's records + quarantined = the records the log holds in it.
    for partition, total in produced.items():
        rows = [row for row in ledger if row.source_partition == partition]
        assert rows[0].start_offset == 0
        assert all(previous.end_offset == row.start_offset for previous, row in zip(rows, rows[1:]))
        assert rows[-1].end_offset == total
        assert sum(row.records + row.quarantined for row in rows) == total
        assert all(row.end_offset - row.start_offset == row.records + row.quarantined for row in rows)
    # The read limit splits the 48 records into batches of at most 16 (so at least three).
    per_batch = Counter()
    for row in ledger:
        per_batch[row.step_id] += row.end_offset - row.start_offset
    assert max(per_batch.values()) <= 16 and len(per_batch) >= 3, per_batch
    # Every good record lands in the partition of its own event hour (UTC), and only those hours exist.
    hours = {(time.strftime("%Y-%m-%d", time.gmtime(t / 1000)), time.gmtime(t / 1000).tm_hour) for _, _, t in good}
    written = {
        (str(row.event_date), row.event_hour) for row in events.select("event_date", "event_hour").distinct().collect()
    }
    assert written == hours


def test_continuous_mode_persists_records_produced_while_it_runs(kafka_broker, spark, tmp_path):
    topic = "persist_continuous"
    kafka_broker.create_topic(topic, 2)
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, 2, mode="continuous", trigger_interval="2s")
    events_path = tmp_path / "lake" / "telemetry" / "events"

    def wave(first: int, count: int) -> list:
        now_ms = int(time.time() * 1000)
        return [
            (i % 2, telemetry_value(f"scooter-{i}", now_ms - 60_000 + i), now_ms - 60_000 + i)
            for i in range(first, first + count)
        ]

    produce(kafka_broker.bootstrap, topic, wave(0, 200))
    with continuous_persist(conf, log=tmp_path / "continuous.log") as job:  # the mode comes from the config
        _wait_for_events(spark, events_path, 200, job)
        produce(kafka_broker.bootstrap, topic, wave(200, 300))  # while the query runs
        _wait_for_events(spark, events_path, 500, job)
        assert job.poll() is None, "a continuous job keeps running"
    events = spark.read.format("delta").load(str(events_path))
    assert events.select("source_partition", "source_offset").distinct().count() == 500


def _wait_for_events(spark, path, expected: int, job, timeout_s: float = 240) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert job.poll() is None, "the continuous job stopped"
        if committed_versions(path) > 0 and spark.read.format("delta").load(str(path)).count() >= expected:
            return
        time.sleep(2)
    raise AssertionError(f"fewer than {expected} events after {timeout_s:.0f} s")


def _wait_for_ledger_end(spark, path, partition: int, end_offset: int, job, timeout_s: float = 120) -> None:
    """Until the ledger says ``partition`` was read up to ``end_offset``: its batch is fully persisted."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert job.poll() is None, "the continuous job stopped"
        reached = (
            spark.read.format("delta")
            .load(str(path))
            .where(F.col("source_partition") == partition)
            .agg(F.max("end_offset"))
            .first()[0]
        )
        if reached is not None and reached >= end_offset:
            return
        time.sleep(1)
    raise AssertionError(f"the ledger never read partition {partition} up to offset {end_offset} in {timeout_s:.0f} s")


def test_a_partition_added_while_the_job_runs_is_persisted(kafka_broker, spark, tmp_path):
    """The reader registers a new partition at its earliest offset (this used to crash the job:
    the reader's clock was never set)."""
    from confluent_kafka.admin import AdminClient, NewPartitions

    topic = "persist_grown"
    kafka_broker.create_topic(topic, 2)
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, 2, mode="continuous", trigger_interval="2s")
    events_path = tmp_path / "lake" / "telemetry" / "events"
    now_ms = int(time.time() * 1000)
    produce(
        kafka_broker.bootstrap,
        topic,
        [(i % 2, telemetry_value("s", now_ms - 60_000 + i), now_ms - 60_000 + i) for i in range(100)],
    )

    with continuous_persist(conf, log=tmp_path / "continuous.log") as job:
        _wait_for_events(spark, events_path, 100, job)
        admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})
        admin.create_partitions([NewPartitions(topic, 3)])[topic].result(timeout=30)
        produce(kafka_broker.bootstrap, topic, [(2, telemetry_value("new", now_ms + i), now_ms + i) for i in range(40)])
        _wait_for_events(spark, events_path, 140, job)
        # Events commit before the ledger: stopping the job the moment they are visible can cut
        # the batch before its ledger row (a replay would write it). Wait for the last word.
        _wait_for_ledger_end(spark, tmp_path / "lake" / "telemetry" / "ledger", partition=2, end_offset=40, job=job)
        assert job.poll() is None, "the job keeps running"
    events = spark.read.format("delta").load(str(events_path))
    rows = (
        events.groupBy("source_partition")
        .agg(F.count("*").alias("n"), F.countDistinct("source_offset").alias("d"))
        .collect()
    )
    assert {r.source_partition: (r.n, r.d) for r in rows} == {0: (50, 50), 1: (50, 50), 2: (40, 40)}
    ledger = spark.read.format("delta").load(str(tmp_path / "lake" / "telemetry" / "ledger"))
    assert ledger.where("source_partition = 2").selectExpr("min(start_offset)", "max(end_offset)").first() == (0, 40), (
        "read from its earliest offset"
    )

    # The partition was registered in a batch of its own that read no offset: such a batch
    # writes its ledger rows and no empty events commit (an idempotent commit costs seconds).
    reads_per_batch = {
        row.step_id: row.offsets
        for row in ledger.groupBy("step_id")
        .agg(F.sum(F.col("end_offset") - F.col("start_offset")).alias("offsets"))
        .collect()
    }
    registration = ledger.where("source_partition = 2").agg(F.min("step_id")).first()[0]
    assert reads_per_batch[registration] == 0, "the batch that registered partition 2 read nothing, from any partition"
    # The table's own making (spark_jobs.lake.table_creation: a CREATE TABLE commit, or over a
    # creator's leftover folder an empty write) is not a batch's.
    appends = (
        DeltaTable.forPath(spark, str(events_path))
        .history()
        .where(f"operation = 'WRITE' AND userMetadata != '{CREATOR}'")
        .collect()
    )
    assert appends and all(int(commit.operationMetrics["numOutputRows"]) > 0 for commit in appends), [
        (commit.version, commit.operationMetrics) for commit in appends
    ]


def test_a_run_persists_at_most_its_budget_of_batches_and_the_next_run_goes_on(kafka_broker, spark, tmp_path):
    """persist.max_batches_per_run: a member's turn in its family's driver. Each run ends after its
    budget (the first run's batch that registers the partitions aside); the runs together persist
    every record exactly once."""
    topic = "persist_turns"
    kafka_broker.create_topic(topic, 1)
    now_ms = int(time.time() * 1000)
    records = [
        (0, telemetry_value(f"van-{i % 3}", _recent_ms(now_ms, i, 80)), _recent_ms(now_ms, i, 80)) for i in range(80)
    ]
    produce(kafka_broker.bootstrap, topic, records)
    conf = write_stream_config(
        tmp_path, kafka_broker.bootstrap, topic, 1, max_records_per_batch=20, max_batches_per_run=2
    )
    events_path = str(tmp_path / "lake" / "telemetry" / "events")

    counts = []
    for run in range(4):
        log = tmp_path / f"persist-{run}.log"
        run_persist(conf, "--mode", "available_now", log=log)
        data_batches = [b for b in batches_persisted(log) if b["records"]]
        assert len(data_batches) <= 2, data_batches
        counts.append(spark.read.format("delta").load(events_path).count())
        if counts[-1] == len(records):
            break
        assert '"run_budget_spent"' in log.read_text()
    assert counts[0] <= 40 < len(records), counts
    assert counts == sorted(counts) and counts[-1] == len(records), counts
    events = spark.read.format("delta").load(events_path)
    assert events.select("source_partition", "source_offset").distinct().count() == len(records)
