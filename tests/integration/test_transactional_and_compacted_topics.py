"""The persist job on the topics users have: transactional and compacted, real broker, real Spark.

Offsets are not records there. Commit and abort markers, aborted transactions (read_committed)
and compacted offsets hold offsets without data. What must hold: every partition is read to its
log end; the lake holds exactly the data records, once each, also across a crash in the
middle of a batch and a restart; the ledger's ranges are contiguous and its ``data_records`` match the log; a
transaction left open neither hangs the job nor is skipped, and a long hold is reported; and a
second reader (Spark's own Kafka source, read_committed) sees exactly what the lake holds.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest
from confluent_kafka import Producer

from harness.log_layouts import TransactionalProducer, lake_offsets, readable_offsets, spark_kafka_offsets
from harness.persist_job import (
    committed_versions,
    continuous_persist,
    run_in_process,
    run_persist,
    telemetry_value,
    write_stream_config,
)
from tidemark.crash_points import CRASH_AT, TEST_FAULTS, CrashPoint

pytestmark = pytest.mark.integration

MINUTE_MS = 60_000


def _event_times(now_ms: int, count: int, span_ms: int = 2 * 60 * MINUTE_MS) -> list[int]:
    """``count`` event times rising evenly over the last ``span_ms``: valid, in order, not late."""
    return [now_ms - span_ms + i * span_ms // count for i in range(count)]


def _ledger(spark, lake):
    return (
        spark.read.format("delta")
        .load(str(lake / "ledger"))
        .orderBy("source_partition", "start_offset", "end_offset")
        .collect()
    )


def _assert_ledger_accounts_for(ledger, data_records: set[tuple[int, int]], partitions: int) -> None:
    """Contiguous ranges from 0 per partition, each range's data_records = the data records the
    log holds in it (not end - start), and the persisted counts add up to them."""
    for partition in range(partitions):
        rows = [row for row in ledger if row.source_partition == partition]
        assert rows[0].start_offset == 0
        assert all(a.end_offset == b.start_offset for a, b in zip(rows, rows[1:])), f"partition {partition}: contiguous"
        for row in rows:
            held = sum(1 for p, o in data_records if p == partition and row.start_offset <= o < row.end_offset)
            assert row.data_records == held == row.records + row.late + row.quarantined, (
                f"partition {partition} [{row.start_offset}, {row.end_offset}): ledger says {row.data_records}, log holds {held}"
            )


def _crash_in_third_batch(conf, log) -> None:
    """The run dies right after its third batch's events commit, before that batch's ledger
    (tidemark.crash_points; in this process: the batch fails and the run ends): the restart must
    replay a batch whose records are partly in the lake."""
    from pyspark.errors import StreamingQueryException

    from spark_jobs.persist.job import main

    crash = {CRASH_AT: CrashPoint("events", batch=2, action="raise").to_json(), TEST_FAULTS: "1"}
    with pytest.raises(StreamingQueryException, match="crash point: after events of batch 2"):
        run_in_process(main, ["--stream", "telemetry", "--conf", str(conf), "--mode", "available_now"], log, crash)


def test_transactional_topic_killed_mid_run_persists_committed_records_once_and_no_aborted_one(
    kafka_broker, spark, tmp_path
):
    topic = "txn_sigkill"
    kafka_broker.create_topic(topic, 2)
    now_ms = int(time.time() * 1000)
    # 160 transactions of 25 records across both partitions, every fifth aborted: the shape of
    # the probe that stopped after the first transaction, large enough to kill mid-run.
    transactions, size = 160, 25
    times = _event_times(now_ms, transactions * size)
    producer = TransactionalProducer(kafka_broker.bootstrap, topic, "tidemark-test-sigkill")
    for t in range(transactions):
        producer.begin(
            [(i % 2, telemetry_value(f"s{i % 9}", times[t * size + i]), times[t * size + i]) for i in range(size)]
        )
        producer.abort() if (t + 1) % 5 == 0 else producer.commit()
    assert len(producer.committed) == 128 * 25 and len(producer.aborted) == 32 * 25
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, 2, max_records_per_batch=500)
    lake = tmp_path / "lake" / "telemetry"

    _crash_in_third_batch(conf, tmp_path / "first_run.log")
    batches_before_kill = committed_versions(lake / "ledger") - 1
    assert 0 < len(lake_offsets(spark, lake)) < len(producer.committed), "killed mid-run"
    # The restart replays the batch the kill cut as its checkpoint planned it, then reads the rest
    # with a larger row budget (fewer batches; an operator may well change it after a crash).
    run_persist(conf, "--mode", "available_now", "--max-records-per-batch", "6000", log=tmp_path / "second_run.log")

    persisted = lake_offsets(spark, lake)
    assert len(persisted) == len(set(persisted)), "no (partition, offset) twice"
    assert set(persisted) == producer.committed, "exactly the committed records"
    assert not set(persisted) & producer.aborted
    assert readable_offsets(kafka_broker.bootstrap, topic, 2) == producer.committed
    second_reader = spark_kafka_offsets(spark, kafka_broker.bootstrap, topic)
    assert sorted(second_reader) == sorted(persisted), "Spark's own Kafka source sees what the lake holds"

    ledger = _ledger(spark, lake)
    # The restart went on where the kill left off: one run of ledger batch ids, each (batch,
    # partition) once, longer than what the killed run committed.
    batch_ids = sorted({row.step_id for row in ledger})
    assert (
        batch_ids == list(range(batch_ids[0], batch_ids[0] + len(batch_ids))) and len(batch_ids) > batches_before_kill
    )
    assert len(ledger) == len({(row.step_id, row.source_partition) for row in ledger})
    _assert_ledger_accounts_for(ledger, producer.committed, 2)
    every_offset = {(p, o) for p, o in producer.committed | producer.aborted}
    for partition in (0, 1):
        final = max(row.end_offset for row in ledger if row.source_partition == partition)
        written = max(o for p, o in every_offset if p == partition) + 2  # the last record, then its marker
        assert final == written, f"partition {partition} read to its log end"
        assert (partition, final - 1) not in every_offset, "its last range ends on the last transaction's marker"
    assert not any(row.held_by_open_transaction for row in ledger)


def test_open_transaction_neither_hangs_nor_is_skipped_and_a_long_hold_is_reported(kafka_broker, spark, tmp_path):
    topic = "txn_open"
    kafka_broker.create_topic(topic, 2)
    now_ms = int(time.time() * 1000)
    times = _event_times(now_ms, 200, span_ms=10 * MINUTE_MS)
    committed = TransactionalProducer(kafka_broker.bootstrap, topic, "tidemark-test-committed")
    committed.begin([(i % 2, telemetry_value("s", times[i]), times[i]) for i in range(100)])
    committed.commit()
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, 2, mode="continuous", trigger_interval="1s")
    text = conf.read_text().replace("open_transaction_timeout: 15m", "open_transaction_timeout: 3s")
    conf.write_text(text)
    lake = tmp_path / "lake" / "telemetry"
    log = tmp_path / "continuous.log"

    with continuous_persist(conf, log=log) as job:
        _wait_until(
            lambda: _tables_exist(lake) and len(lake_offsets(spark, lake)) == 100,
            job,
            "the committed records persisted",
        )
        # A producer opens a transaction on partition 1 and goes quiet, as one that died would.
        opened_ms = int(time.time() * 1000)
        dead = TransactionalProducer(kafka_broker.bootstrap, topic, "tidemark-test-dead")
        dead.begin([(1, telemetry_value("open", times[100 + i]), times[100 + i]) for i in range(20)])
        # Partition 0 keeps being written (outside any transaction): the job must not hang on 1.
        plain = Producer({"bootstrap.servers": kafka_broker.bootstrap})
        for i in range(30):
            plain.produce(topic, telemetry_value("p0", times[120 + i]), partition=0, timestamp=times[120 + i])
        assert plain.flush(30) == 0
        _wait_until(lambda: len(lake_offsets(spark, lake)) == 130, job, "partition 0's new records persisted")

        held = lambda: [r for r in _ledger(spark, lake) if r.held_by_open_transaction]  # noqa: E731
        _wait_until(lambda: held(), job, "the hold reported in the ledger")
        reported_ms = int(time.time() * 1000)
        assert {row.source_partition for row in held()} == {1}, "the ledger names the held partition"
        # Held since the job first saw the transaction open, at least the 3 s timeout before it said so.
        since_ms = int(held()[0].open_transaction_since.timestamp() * 1000)
        assert opened_ms <= since_ms <= reported_ms - 3_000, (opened_ms, since_ms, reported_ms)
        assert (
            "partition_held_by_open_transaction" in log.read_text()
            and "partition 1 cannot be read past offset" in log.read_text()
        )
        assert not set(lake_offsets(spark, lake)) & dead.pending, "nothing uncommitted persisted"

        dead.commit()
        _wait_until(
            lambda: len(lake_offsets(spark, lake)) == 150, job, "the transaction's records persisted once committed"
        )
        _wait_until(lambda: _latest_ledger_row(spark, lake, 1).open_transaction_since is None, job, "the hold released")

    persisted = lake_offsets(spark, lake)
    expected = committed.committed | dead.committed | {(0, o) for o in range(51, 81)}
    assert len(persisted) == len(set(persisted)) == 150
    assert set(persisted) == expected == readable_offsets(kafka_broker.bootstrap, topic, 2)


def _latest_ledger_row(spark, lake, partition: int):
    return max((r for r in _ledger(spark, lake) if r.source_partition == partition), key=lambda r: r.step_id)


def test_compacted_topic_with_offset_holes_killed_mid_run_persists_every_retained_record_once(
    kafka_broker, spark, tmp_path
):
    topic = "compacted_sigkill"
    compaction = {
        "cleanup.policy": "compact",
        "segment.ms": "100",
        "min.cleanable.dirty.ratio": "0.01",
        "min.compaction.lag.ms": "0",
        "delete.retention.ms": "86400000",  # tombstones stay: they are records too, and must land once
    }
    kafka_broker.create_topic(topic, 2, compaction)
    now_ms = int(time.time() * 1000)
    keys, overwritten = 1_000, 500
    times = _event_times(now_ms, keys + overwritten + 1)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap, "linger.ms": 20, "enable.idempotence": True})

    def write(index: int, key: int, value) -> None:
        for partition in (0, 1):
            producer.produce(topic, value=value, key=b"k%d" % key, partition=partition, timestamp=times[index])

    for key in range(keys):
        write(key, key, telemetry_value(f"s{key}", times[key]))
    assert producer.flush(60) == 0
    time.sleep(0.5)  # a new segment for the second wave
    for i in range(overwritten):  # overwrite half the keys; every tenth overwrite is a tombstone
        write(keys + i, i, None if i % 10 == 0 else telemetry_value(f"s{i}", times[keys + i]))
    assert producer.flush(60) == 0
    time.sleep(0.5)
    write(keys + overwritten, -1, telemetry_value("roll", times[-1]))  # rolls the second wave's segment
    assert producer.flush(60) == 0

    retained_per_partition = keys + 1  # every key's latest value, and the roll record
    deadline = time.monotonic() + 120
    while len(retained := readable_offsets(kafka_broker.bootstrap, topic, 2)) != 2 * retained_per_partition:
        assert time.monotonic() < deadline, (
            f"the log cleaner left {len(retained)} records, not {2 * retained_per_partition}"
        )
        time.sleep(1)
    overwritten_offsets = {(p, o) for p in (0, 1) for o in range(overwritten)}
    assert not retained & overwritten_offsets, "the first wave's overwritten records are holes now"

    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, 2, max_records_per_batch=250)
    lake = tmp_path / "lake" / "telemetry"
    _crash_in_third_batch(conf, tmp_path / "first_run.log")
    # The first batches may read only compaction holes (offsets without data): mid-run is what counts.
    assert len(lake_offsets(spark, lake)) < len(retained), "killed mid-run"
    # The restart replays the batch the kill cut as its checkpoint planned it, then reads the rest
    # with a larger row budget (fewer batches; an operator may well change it after a crash).
    run_persist(conf, "--mode", "available_now", "--max-records-per-batch", "6000", log=tmp_path / "second_run.log")

    persisted = lake_offsets(spark, lake)
    assert len(persisted) == len(set(persisted)) and set(persisted) == retained, "every retained record once"
    assert sorted(spark_kafka_offsets(spark, kafka_broker.bootstrap, topic)) == sorted(persisted), (
        "the second reader agrees"
    )
    quarantine = spark.read.format("delta").load(str(lake / "quarantine")).collect()
    assert Counter(row.reason for row in quarantine) == {"empty_value": 2 * (overwritten // 10)}, (
        "tombstones, once each"
    )
    assert all("tombstone" in row.detail for row in quarantine)
    ledger = _ledger(spark, lake)
    _assert_ledger_accounts_for(ledger, retained, 2)
    assert sum(row.end_offset - row.start_offset - row.data_records for row in ledger) == 2 * overwritten, "the holes"


def _tables_exist(lake) -> bool:
    """The job creates its tables when it starts; until then there is nothing to read."""
    return all(committed_versions(lake / table) > 0 for table in ("events", "late", "quarantine", "ledger"))


def _wait_until(condition, job, what: str, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert job.poll() is None, f"the continuous job stopped while waiting for: {what}"
        if condition():
            return
        time.sleep(1)
    raise AssertionError(f"not within {timeout_s:.0f} s: {what}")
