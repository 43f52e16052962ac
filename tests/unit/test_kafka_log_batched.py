"""connectors.kafka_log's batched questions (offsetsForTimes for several partitions, the next data
record of several partitions by one reader) against a scripted stand-in for confluent_kafka's
Consumer: what is asked of the broker, and how its answers, end-of-partition events and errors
become answers. tests/integration/test_kafka_log.py checks the same against a real broker."""

from __future__ import annotations

import confluent_kafka
import pytest
from confluent_kafka import KafkaError, KafkaException

from connectors import kafka_log
from connectors.kafka_log import KafkaLog, KafkaUnavailableError, RetentionLossError, first_records
from tidemark.aligned_slices import LoggedRecord

TOPIC = "t"


class Message:
    def __init__(self, partition, offset=-1, timestamp_ms=0, error=None):
        self._partition, self._offset, self._timestamp_ms, self._error = partition, offset, timestamp_ms, error

    def partition(self):
        return self._partition

    def offset(self):
        return self._offset

    def timestamp(self):
        return (confluent_kafka.TIMESTAMP_CREATE_TIME, self._timestamp_ms)

    def error(self):
        return self._error


def eof(partition):
    return Message(partition, error=KafkaError(KafkaError._PARTITION_EOF))


class Answer:
    def __init__(self, partition, offset, error=None):
        self.partition, self.offset, self.error = partition, offset, error


class ScriptedConsumer:
    """Delivers ``script`` one message per consume() call, skipping unassigned partitions."""

    created: list[ScriptedConsumer] = []
    script: list[Message] = []
    offsets_answer = None

    def __init__(self, settings):
        self.settings = settings
        self.assigned: dict[int, int] = {}
        self.unassigned: list[int] = []
        self.requests: list[list] = []
        self.closed = False
        self._pending = list(ScriptedConsumer.script)
        ScriptedConsumer.created.append(self)

    def assign(self, partitions):
        self.assigned = {tp.partition: tp.offset for tp in partitions}

    def incremental_unassign(self, partitions):
        for tp in partitions:
            self.unassigned.append(tp.partition)
            del self.assigned[tp.partition]

    def consume(self, num_messages=1, timeout=-1):
        while self._pending:
            message = self._pending.pop(0)
            if message.partition() in self.assigned:
                return [message]
        return []

    def offsets_for_times(self, partitions, timeout=-1):
        self.requests.append([(tp.partition, tp.offset) for tp in partitions])
        return ScriptedConsumer.offsets_answer(partitions)

    def close(self):
        self.closed = True


@pytest.fixture
def consumer(monkeypatch):
    monkeypatch.setattr(confluent_kafka, "Consumer", ScriptedConsumer)
    ScriptedConsumer.created = []
    ScriptedConsumer.script = []
    ScriptedConsumer.offsets_answer = None
    yield ScriptedConsumer


def test_one_reader_answers_every_partition_with_its_first_data_record_or_none_at_the_end(consumer):
    consumer.script = [Message(1, 7, 1_000), Message(1, 8, 1_001), Message(0, 40, 2_000), eof(2), Message(0, 41, 2_001)]
    answers = first_records("b:1", TOPIC, {0: 35, 1: 5, 2: 90}, timeout_s=5)
    assert answers == {0: LoggedRecord(40, 2_000), 1: LoggedRecord(7, 1_000), 2: None}
    (reader,) = consumer.created
    assert reader.closed
    assert reader.unassigned == [1, 0, 2], "each partition stops being fetched once answered"
    assert reader.settings["isolation.level"] == "read_committed"
    assert reader.settings["max.partition.fetch.bytes"] < kafka_log._READER_SETTINGS.get(
        "max.partition.fetch.bytes", 1_048_576
    )


def test_a_message_of_an_answered_partition_still_queued_is_ignored(consumer, monkeypatch):
    class KeepsFetching(ScriptedConsumer):
        def incremental_unassign(self, partitions):
            self.unassigned.extend(tp.partition for tp in partitions)  # ...but one message was already queued

    consumer.script = [Message(0, 3, 10), Message(0, 4, 11), Message(1, 9, 12)]
    monkeypatch.setattr(confluent_kafka, "Consumer", KeepsFetching)
    assert first_records("b:1", TOPIC, {0: 3, 1: 9}) == {0: LoggedRecord(3, 10), 1: LoggedRecord(9, 12)}


def test_nothing_asked_opens_no_reader(consumer):
    assert first_records("b:1", TOPIC, {}) == {}
    assert consumer.created == []


def test_an_offset_out_of_retention_raises_retention_loss(consumer):
    consumer.script = [Message(0, error=KafkaError(KafkaError.OFFSET_OUT_OF_RANGE))]
    with pytest.raises(RetentionLossError):
        first_records("b:1", TOPIC, {0: 0})
    assert consumer.created[0].closed


def test_another_error_is_raised(consumer):
    consumer.script = [Message(0, error=KafkaError(KafkaError._TRANSPORT))]
    with pytest.raises(KafkaException):
        first_records("b:1", TOPIC, {0: 0})


def test_silence_raises_timeout_naming_the_partitions_not_answered(consumer):
    consumer.script = [Message(0, 5, 1)]
    with pytest.raises(TimeoutError, match=r"partitions \[1\]"):
        first_records("b:1", TOPIC, {0: 5, 1: 7}, timeout_s=0.05)


def test_next_record_is_next_records_of_one_partition(consumer):
    consumer.script = [Message(3, 12, 99)]
    log = KafkaLog("b:1", TOPIC)
    assert log.next_record(3, 10) == LoggedRecord(12, 99)
    assert consumer.created[-1].assigned == {}, "answered and unassigned"


def test_offsets_for_time_asks_once_for_all_partitions_and_none_means_no_such_record(consumer):
    consumer.offsets_answer = lambda asked: [Answer(tp.partition, {0: 17, 1: -1, 2: 0}[tp.partition]) for tp in asked]
    log = KafkaLog("b:1", TOPIC)
    assert log.offsets_for_time([0, 1, 2], 5_000) == {0: 17, 1: None, 2: 0}
    assert log.offset_for_time(0, 5_000) == 17
    asking = consumer.created[0]  # the read_committed client of the log
    assert asking.requests == [[(0, 5_000), (1, 5_000), (2, 5_000)], [(0, 5_000)]]
    assert log.offsets_for_time([], 5_000) == {}
    assert len(asking.requests) == 2, "nothing asked, no request"


def test_offsets_for_time_raises_on_a_partition_error_rather_than_answering_none(consumer):
    consumer.offsets_answer = lambda asked: [
        Answer(tp.partition, -1, KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION) if tp.partition == 1 else None)
        for tp in asked
    ]
    with pytest.raises(KafkaUnavailableError, match="partition 1"):
        KafkaLog("b:1", TOPIC).offsets_for_time([0, 1], 5_000)
