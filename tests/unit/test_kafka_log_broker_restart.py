"""connectors.kafka_log's log bounds while a broker restarts: asked again within the timeout
while the broker has no leader or refuses connections, then a failure naming the broker. A
scripted admin client; tests/integration/test_world_faults.py restarts a real broker."""

from __future__ import annotations

import confluent_kafka
import confluent_kafka.admin
import pytest
from confluent_kafka import KafkaError, KafkaException

from connectors.kafka_log import KafkaLog, KafkaUnavailableError, LogBounds


class Offset:
    def __init__(self, offset):
        self.offset = offset


def Done(offset):  # noqa: N802 - reads as the answer it stands for
    """A ListOffsets answer already in, as the admin client's futures are (concurrent.futures)."""
    from concurrent.futures import Future

    done = Future()
    done.set_result(Offset(offset))
    return done


class RestartingAdmin:
    """Fails ListOffsets ``failures`` times with "no leaders found", then answers: earliest 5,
    every latest 9."""

    failures = 0
    no_offsets = 0  # answers of -1001 (OFFSET_INVALID) with no error, before the real ones
    asked = 0

    def poll(self, timeout=None):
        return 0  # serves the client's callbacks: none come from this stand-in

    def __init__(self, settings):
        pass

    def list_offsets(self, requests, isolation_level=None, request_timeout=None):
        RestartingAdmin.asked += 1
        if RestartingAdmin.failures > 0:
            RestartingAdmin.failures -= 1
            raise KafkaException(KafkaError(KafkaError._NOENT, "Failed to query partition leaders: No leaders found"))
        if RestartingAdmin.no_offsets > 0:
            RestartingAdmin.no_offsets -= 1
            return {tp: Done(-1001) for tp in requests}
        offset = 5 if "earliest" in repr(next(iter(requests.values()))).lower() else 9
        return {tp: Done(offset) for tp in requests}

    def list_topics(self, topic=None, timeout=None):
        return None


class IdleConsumer:
    def __init__(self, settings):
        pass

    def close(self):
        pass


@pytest.fixture
def log(monkeypatch):
    monkeypatch.setattr(confluent_kafka.admin, "AdminClient", RestartingAdmin)
    monkeypatch.setattr(confluent_kafka, "Consumer", IdleConsumer)
    monkeypatch.setattr("connectors.kafka_log.time.sleep", lambda seconds: None)
    RestartingAdmin.asked = 0
    RestartingAdmin.no_offsets = 0
    return KafkaLog("127.0.0.1:19092", "telemetry", timeout_s=30)


def test_a_broker_without_leaders_for_a_moment_is_asked_again(log):
    RestartingAdmin.failures = 2
    assert log.partition_bounds([0]) == {0: LogBounds(5, 9, 9)}


def test_a_broker_that_stays_away_past_the_timeout_fails_naming_it(log, monkeypatch):
    RestartingAdmin.failures = 10**6
    clock = iter(range(0, 10**6, 10))  # 10 s per look at the clock
    monkeypatch.setattr("connectors.kafka_log.time.monotonic", lambda: next(clock))
    with pytest.raises(
        KafkaUnavailableError,
        match=r"Kafka at 127\.0\.0\.1:19092 did not answer ListOffsets for topic 'telemetry' \(asked for 30 s\)",
    ):
        log.partition_bounds([0])
    assert 1 < RestartingAdmin.asked < 10


def test_an_answer_without_an_offset_is_asked_again_never_planned_with(log):
    RestartingAdmin.no_offsets = 2
    assert log.partition_bounds([0]) == {0: LogBounds(5, 9, 9)}


def test_answers_without_an_offset_past_the_timeout_fail_naming_the_broker(log, monkeypatch):
    RestartingAdmin.no_offsets = 10**6
    clock = iter(range(0, 10**6, 10))
    monkeypatch.setattr("connectors.kafka_log.time.monotonic", lambda: next(clock))
    with pytest.raises(KafkaUnavailableError, match=r"gave no offset for partitions \[0\]"):
        log.partition_bounds([0])
