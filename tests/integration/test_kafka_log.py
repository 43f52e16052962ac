"""connectors.kafka_log against a real broker, on a transactional partition: what the planner's
questions get answered where offsets hold no data record."""

from __future__ import annotations

import time

import pytest

from connectors.kafka_log import KafkaLog, LogBounds, read_range, read_ranges
from harness.log_layouts import TransactionalProducer
from harness.persist_job import produce
from tidemark.aligned_slices import LoggedRecord

pytestmark = pytest.mark.integration

BASE = 1_763_780_400_000  # record timestamps far in the past: markers carry the wall clock


@pytest.fixture(scope="module")
def layout(kafka_broker):
    """Partition 0: 3 committed records, a marker, 40 aborted records and their marker, 2 committed
    records and their marker, 300 aborted records and their marker; then an open transaction."""
    topic = "kafka_log_layout"
    kafka_broker.create_topic(topic, 1)
    producer = TransactionalProducer(kafka_broker.bootstrap, topic, "tidemark-test-kafka-log")
    batches = [(3, True), (40, False), (2, True), (300, False)]
    for number, (count, commit) in enumerate(batches):
        producer.begin([(0, b"v", BASE + number * 10_000 + i) for i in range(count)])
        producer.commit() if commit else producer.abort()
    stable_end = 3 + 1 + 40 + 1 + 2 + 1 + 300 + 1
    open_transaction = TransactionalProducer(kafka_broker.bootstrap, topic, "tidemark-test-kafka-log-open")
    open_transaction.begin([(0, b"open", BASE + 99_000 + i) for i in range(5)])
    log = KafkaLog(kafka_broker.bootstrap, topic, timeout_s=20)
    yield log, stable_end, kafka_broker.bootstrap, topic
    log.close()
    open_transaction.commit()


def test_bounds_give_the_last_stable_offset_and_the_written_end(layout):
    log, stable_end, _, _ = layout
    assert log.bounds(0) == LogBounds(earliest=0, end=stable_end, written_end=stable_end + 5)


def test_next_record_steps_over_markers_and_aborted_transactions(layout):
    log, stable_end, _, _ = layout
    assert log.next_record(0, 0) == LoggedRecord(0, BASE)
    assert log.next_record(0, 3) == LoggedRecord(45, BASE + 20_000), "marker 3, aborted 4-43, marker 44"
    assert log.next_record(0, 10) == LoggedRecord(45, BASE + 20_000), "from inside the aborted transaction"
    started = time.monotonic()
    assert log.next_record(0, 47) is None, "only a marker, aborted records and a marker before the stable end"
    assert time.monotonic() - started < 10, "answered at the stable end, without waiting for the open transaction"


def test_last_record_time_looks_back_past_a_trailing_aborted_transaction(layout):
    log, stable_end, _, _ = layout
    assert log.last_record_time(0, stable_end) == BASE + 20_001, "300 aborted records and two markers back"
    assert log.last_record_time(0, 45) == BASE + 2
    assert log.last_record_time(0, 0) is None


def test_a_range_of_markers_and_aborted_records_reads_nothing_and_ends(layout):
    _, stable_end, bootstrap, topic = layout
    assert [r.offset for chunk in read_range(bootstrap, topic, 0, 0, 47) for r in chunk] == [0, 1, 2, 45, 46]
    assert list(read_range(bootstrap, topic, 0, 47, stable_end, timeout_s=10)) == []


def test_several_partitions_are_answered_at_once_as_each_alone(kafka_broker, layout):
    """partition_bounds, last_record_times and read_ranges of several partitions (one request, one
    reader) answer exactly as bounds, last_record_time and read_range do partition by partition."""
    topic = "kafka_log_several"
    kafka_broker.create_topic(topic, 3)
    produce(
        kafka_broker.bootstrap,
        topic,
        [(0, b"a", BASE + i) for i in range(50)] + [(2, b"c", BASE + 100 + i) for i in range(30)],
    )
    log = KafkaLog(kafka_broker.bootstrap, topic, timeout_s=20)
    try:
        bounds = log.partition_bounds()
        assert bounds == {0: LogBounds(0, 50, 50), 1: LogBounds(0, 0, 0), 2: LogBounds(0, 30, 30)}
        assert bounds == {p: log.bounds(p) for p in range(3)}
        assert log.last_record_times({0: 50, 1: 0, 2: 10}) == {0: BASE + 49, 1: None, 2: BASE + 109}
        ranges = {0: (5, 45), 1: (0, 0), 2: (0, 30)}
        together: dict[int, list[int]] = {}
        for partition, records in read_ranges(kafka_broker.bootstrap, topic, ranges, chunk=7):
            together.setdefault(partition, []).extend(r.offset for r in records)
        alone = {
            p: [r.offset for chunk in read_range(kafka_broker.bootstrap, topic, p, *ranges[p]) for r in chunk]
            for p in (0, 2)
        }
        assert together == alone == {0: list(range(5, 45)), 2: list(range(30))}
    finally:
        log.close()
    transactional, stable_end, _, _ = layout
    assert transactional.partition_bounds([0]) == {0: transactional.bounds(0)}
    assert transactional.last_record_times({0: stable_end}) == {0: BASE + 20_001}
