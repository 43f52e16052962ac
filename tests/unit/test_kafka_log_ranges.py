"""connectors.kafka_log.read_ranges (the read tasks' reader) against a scripted stand-in for
confluent_kafka's Consumer: how ranges end (at their end offset, at the readable end), what is
yielded per fetch, and its error branches (another Kafka error, silence). Retention loss while
reading: tests/unit/test_retention_loss_in_readers.py; a real broker: tests/integration."""

from __future__ import annotations

import confluent_kafka
import pytest
from confluent_kafka import KafkaError, KafkaException
from test_kafka_log_batched import Message, ScriptedConsumer, consumer, eof  # noqa: F401 (the fixture)

from connectors.kafka_log import RawRecord, read_ranges

TOPIC = "t"


class Record(Message):
    """A data record whose key and value name its partition and offset."""

    def key(self):
        return f"k{self._partition}".encode()

    def value(self):
        return f"v{self._offset}".encode()

    def headers(self):
        """Every third record carries a trace header, as a traced producer's would."""
        return [("trace_id", f"t{self._offset}".encode())] if self._offset % 3 == 0 else None


class FetchesInBatches(ScriptedConsumer):
    """Delivers up to ``num_messages`` of the script per consume() call, as a broker fetch does;
    ``asked`` records how many each call asked for."""

    def __init__(self, settings):
        super().__init__(settings)
        self.asked: list[int] = []

    def consume(self, num_messages=1, timeout=-1):
        self.asked.append(num_messages)
        batch = []
        while self._pending and len(batch) < num_messages:
            message = self._pending.pop(0)
            if message.partition() in self.assigned:
                batch.append(message)
        return batch


def _record(partition, offset):
    headers = (("trace_id", f"t{offset}".encode()),) if offset % 3 == 0 else None  # kept as written
    return RawRecord(offset, 1_000 + offset, f"k{partition}".encode(), f"v{offset}".encode(), headers)


def test_each_fetch_yields_its_records_per_partition_and_ranges_end_at_their_end_or_the_readable_end(
    consumer, monkeypatch
):
    monkeypatch.setattr(confluent_kafka, "Consumer", FetchesInBatches)
    # Partition 0: offsets [10, 13); offset 11 holds no data record (a marker). Partition 1:
    # [5, 9), of which only 5 holds data before the readable end (an end-of-partition event).
    consumer.script = [Record(0, 10, 1_010), Record(1, 5, 1_005), Record(0, 12, 1_012), eof(1), Record(0, 13, 1_013)]
    read = list(read_ranges("b:1", TOPIC, {0: (10, 13), 1: (5, 9)}, chunk=3, timeout_s=5))
    assert read == [(0, [_record(0, 10), _record(0, 12)]), (1, [_record(1, 5)])]
    (reader,) = consumer.created
    # Asked for no more than the ranges can still deliver: 3 + 4 offsets, capped at the chunk.
    assert reader.asked == [3, 3]
    assert reader.unassigned == [0, 1], "each partition stops being fetched after the fetch that ended its range"
    assert reader.closed


def test_an_empty_range_opens_no_reader(consumer):
    assert list(read_ranges("b:1", TOPIC, {0: (7, 7)})) == []
    assert consumer.created == []


def test_another_kafka_error_is_raised_and_the_reader_closed(consumer):
    consumer.script = [Message(0, error=KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION))]
    with pytest.raises(KafkaException) as raised:
        list(read_ranges("b:1", TOPIC, {0: (0, 10)}, timeout_s=5))
    assert raised.value.args[0].code() == KafkaError.NOT_LEADER_FOR_PARTITION
    assert consumer.created[0].closed


def test_a_read_the_acls_refuse_is_a_refusal_naming_the_topic_and_the_reader_closed(consumer):
    from connectors.kafka_clients import KafkaRefusedError

    consumer.script = [Message(0, error=KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))]
    with pytest.raises(KafkaRefusedError, match="^Kafka at b:1 refused PLAINTEXT reading topic 't': "):
        list(read_ranges("b:1", TOPIC, {0: (0, 10)}, timeout_s=5))
    assert consumer.created[0].closed


def test_silence_raises_timeout_naming_each_unfinished_range_where_it_stopped(consumer):
    consumer.script = [Record(0, 3, 1_003)]
    with pytest.raises(TimeoutError) as raised:
        list(read_ranges("b:1", TOPIC, {0: (3, 6), 2: (8, 9)}, timeout_s=0.05))
    assert str(raised.value) == (
        "'t': nothing received for 0s: partition 0 at offset 4 (range [3, 6)), partition 2 at offset 8 (range [8, 9))"
    )
    assert consumer.created[0].closed
