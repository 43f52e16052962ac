"""tidemark-generate against a real Kafka broker: what lands in each partition, and with which timestamps."""

import json
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME, Consumer, TopicPartition

from generator.__main__ import main
from generator.profiles import HOUR_MS
from tidemark.event_time_text import format_event_time, parse_event_time
from tidemark.record_decoder import DecodedEvent, RecordDecoder
from tidemark.stream_config import load_stream

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
MAX_DISORDER_MS = 30_000
MINUTE_MS = 60_000


@pytest.fixture
def stream(monkeypatch):
    monkeypatch.setenv("TIDEMARK_LAKE_ROOT", "/tmp/lake")
    monkeypatch.setenv("TIDEMARK_CHECKPOINT_ROOT", "/tmp/checkpoints")
    monkeypatch.delenv("TIDEMARK_CONF", raising=False)
    return load_stream(REPO / "conf" / "streams.yaml", "telemetry")


@pytest.fixture
def fresh_topic(kafka_broker):
    name = f"generator_{uuid.uuid4().hex[:10]}"
    kafka_broker.create_topic(name, 4)
    return name


def read_partitions(bootstrap, topic, partitions):
    """Every message of the topic, by partition, read from the beginning up to the current end."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"test-{uuid.uuid4().hex}", "enable.auto.commit": False}
    )
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        messages = defaultdict(list)
        remaining = sum(ends.values())
        deadline = time.monotonic() + 60
        while remaining:
            assert time.monotonic() < deadline, f"{remaining} messages still unread after 60 s"
            # A short timeout: consume() waits its whole timeout whenever fewer messages are ready.
            for message in consumer.consume(10_000, timeout=0.5):
                assert message.error() is None, message.error()
                messages[message.partition()].append(message)
                remaining -= 1
        return messages
    finally:
        consumer.close()


def due_times(partition: int, start_ms: int) -> list[int]:
    """When each record of the default profile of ``partition`` is due over the two hours from
    ``start_ms`` (a whole hour), in ms: the rates generator/profiles.py documents. steady: one
    every 5 s; slow: one an hour, at minute 30; heavy: one every 200 ms; bursty: 600 in the
    minute from minutes 5, 25 and 45, one every 100 ms."""
    if partition == 0:
        return [start_ms + i * 5_000 for i in range(2 * 720)]
    if partition == 1:
        return [start_ms + hour * HOUR_MS + 30 * MINUTE_MS for hour in range(2)]
    if partition == 2:
        return [start_ms + i * 200 for i in range(2 * 18_000)]
    return [
        start_ms + hour * HOUR_MS + minute * MINUTE_MS + i * 100
        for hour in range(2)
        for minute in (5, 25, 45)
        for i in range(600)
    ]


def test_a_two_hour_backlog_lands_in_every_partition_with_event_time_as_timestamp(
    kafka_broker, fresh_topic, stream, tmp_path, capsys
):
    # The last whole hour but one: in the past, as the broker only takes timestamps up to its clock.
    end_ms = (time.time_ns() // 1_000_000 // HOUR_MS - 1) * HOUR_MS
    start_ms = end_ms - 2 * HOUR_MS
    summary_file = tmp_path / "summary.json"

    exit_code = main(
        [
            "--bootstrap",
            kafka_broker.bootstrap,
            "--topic",
            fresh_topic,
            "backlog",
            "--hours",
            "2",
            "--end",
            format_event_time(end_ms),
            "--bad-records",
            "14",
            "--summary-file",
            str(summary_file),
        ]
    )

    assert exit_code == 0
    printed = capsys.readouterr().out
    summary = json.loads(printed)
    assert json.loads(summary_file.read_text()) == summary
    expected_records = {0: 1_440, 1: 2, 2: 36_000, 3: 3_600}
    assert [(p["partition"], p["profile"], p["records"], p["bad_records"]) for p in summary["partitions"]] == [
        (0, "steady", 1_440, 4),
        (1, "slow", 2, 4),
        (2, "heavy", 36_000, 3),
        (3, "bursty", 3_600, 3),
    ]
    assert summary["records"] == 41_042 and summary["bad_records"] == 14 and summary["records_per_s"] > 0

    decoder = RecordDecoder(stream.payload, stream.event_time.max_future_skew_ms)
    messages = read_partitions(kafka_broker.bootstrap, fresh_topic, 4)
    rejections = Counter()
    for partition in range(4):
        event_times = []
        highest = None
        bad = 0
        for message in messages[partition]:
            timestamp_type, timestamp = message.timestamp()
            assert timestamp_type == TIMESTAMP_CREATE_TIME
            assert start_ms - MAX_DISORDER_MS <= timestamp < end_ms
            decoded = decoder.decode(message.value(), read_time_ms=timestamp)
            if not isinstance(decoded, DecodedEvent):
                # A bad record carries the time it was inserted, never its broken event time.
                assert message.key().endswith(b"-broken")
                rejections[decoded.reason] += 1
                bad += 1
                continue
            assert timestamp == decoded.event_time_ms
            assert message.key().decode() == decoded.values["device_id"]
            assert decoded.values["device_id"].startswith(f"scooter-p{partition}-")
            if highest is not None:
                assert highest - timestamp <= MAX_DISORDER_MS
            highest = timestamp if highest is None else max(highest, timestamp)
            event_times.append(timestamp)

        assert len(event_times) == expected_records[partition]
        assert bad == summary["partitions"][partition]["bad_records"]
        # The log holds every record the profile promises, in production order: the i-th is due
        # at the i-th due time, and its event time is that time less at most MAX_DISORDER_MS.
        due = due_times(partition, start_ms)
        assert len(event_times) == len(due)
        off_schedule = [
            (i, t, d) for i, (t, d) in enumerate(zip(event_times, due)) if not d - MAX_DISORDER_MS <= t <= d
        ]
        assert off_schedule == [], f"partition {partition}: (index, event time, due time) of records off their schedule"

    assert rejections == {
        "malformed_json": 2,
        "not_an_object": 2,
        "missing_event_time": 2,
        "unparsable_event_time": 2,
        "wrong_type": 2,
        "empty_value": 2,
        "future_event_time": 2,
    }


def test_live_produces_at_the_wall_clock_pace_and_stops_by_itself(kafka_broker, fresh_topic, stream, capsys):
    # heavy x 50 = 250 records/s per partition.
    exit_code = main(
        [
            "--bootstrap",
            kafka_broker.bootstrap,
            "--topic",
            fresh_topic,
            "live",
            "--duration",
            "3s",
            "--profiles",
            "heavy",
            "--rate-scale",
            "50",
        ]
    )

    assert exit_code == 0
    summary = json.loads(capsys.readouterr().out)
    assert 2.9 <= summary["elapsed_s"] < 10
    window_start = parse_event_time(summary["window_start"])
    window_end = parse_event_time(summary["window_end"])
    assert window_end - window_start == 3_000
    messages = read_partitions(kafka_broker.bootstrap, fresh_topic, 4)
    for partition in range(4):
        assert len(messages[partition]) == summary["partitions"][partition]["records"] == 750
        for message in messages[partition]:
            timestamp = message.timestamp()[1]
            assert window_start - MAX_DISORDER_MS <= timestamp < window_end
            assert parse_event_time(json.loads(message.value())["event_time"]) == timestamp


def test_a_topic_with_too_few_partitions_is_refused_before_anything_is_produced(kafka_broker, stream, capsys):
    topic = f"generator_small_{uuid.uuid4().hex[:10]}"
    kafka_broker.create_topic(topic, 2)

    exit_code = main(["--bootstrap", kafka_broker.bootstrap, "--topic", topic, "backlog", "--hours", "1"])

    assert exit_code == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"topic {topic!r} at {kafka_broker.bootstrap} has 2 partitions but 4 are needed" in captured.err
    assert sum(len(m) for m in read_partitions(kafka_broker.bootstrap, topic, 2).values()) == 0


def test_a_missing_topic_says_how_to_create_it(kafka_broker, stream, capsys):
    exit_code = main(["--bootstrap", kafka_broker.bootstrap, "--topic", "generator_absent", "backlog", "--hours", "1"])

    assert exit_code == 1
    assert "topic 'generator_absent' does not exist" in capsys.readouterr().err


def test_transactions_commit_every_record_and_leave_a_marker_offset_per_commit(
    kafka_broker, fresh_topic, stream, capsys
):
    from harness.log_layouts import readable_offsets

    end_ms = (time.time_ns() // 1_000_000 // HOUR_MS - 1) * HOUR_MS
    exit_code = main(
        [
            "--bootstrap",
            kafka_broker.bootstrap,
            "--topic",
            fresh_topic,
            "backlog",
            "--hours",
            "0.25",
            "--end",
            format_event_time(end_ms),
            "--profiles",
            "steady,steady,steady,steady",
            "--transaction-size",
            "50",
        ]
    )
    assert exit_code == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["transaction_size"] == 50
    per_partition = {p["partition"]: p["records"] for p in summary["partitions"]}

    readable = readable_offsets(kafka_broker.bootstrap, fresh_topic, 4)
    assert Counter(p for p, _ in readable) == per_partition, "every record committed and readable"
    consumer = Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": "test-ends"})
    try:
        written = {p: consumer.get_watermark_offsets(TopicPartition(fresh_topic, p), timeout=10)[1] for p in range(4)}
    finally:
        consumer.close()
    commits = -(-sum(per_partition.values()) // 50)  # every transaction touches every partition here
    for partition, records in per_partition.items():
        markers = written[partition] - records
        assert 0 < markers <= commits, f"partition {partition}: {markers} marker offsets for {commits} commits"
