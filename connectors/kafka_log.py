"""The Kafka log as tidemark's readers see it: partition bounds, and exact offset ranges.

Readers use read_committed, so offsets and records differ: a transaction's commit or abort
marker, the records of an aborted transaction and offsets removed by compaction hold an offset
that no reader ever receives. Everything here counts and finds *data records*; a range of
offsets may hold fewer of them than ``end - start``, or none.

confluent_kafka is imported inside the functions so that the driver, the DAG files and the unit
tests import this module cheaply (and Spark pickles no client object).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterator

from tidemark.aligned_slices import LoggedRecord


class RetentionLossError(RuntimeError):
    """Offsets tidemark must read are no longer in the log: they fell out of retention."""


class KafkaUnavailableError(RuntimeError):
    """The broker did not answer in time."""


@dataclass(frozen=True)
class LogBounds:
    """A partition's offsets: [earliest, end) are retained and readable.

    ``end`` is the readable end: the last stable offset (LSO), below which every transaction is
    decided. ``written_end`` is the offset the next record gets (the high watermark); it is
    larger than ``end`` while a transaction is open.
    """

    earliest: int
    end: int
    written_end: int


@dataclass(frozen=True)
class RawRecord:
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None


class KafkaLog:
    """Metadata and bounds of one topic; one instance per driver-side reader, reused across batches."""

    def __init__(self, bootstrap_servers: str, topic: str, timeout_s: float = 30.0):
        from confluent_kafka import Consumer

        self._topic = topic
        self._timeout_s = timeout_s
        self._bootstrap = bootstrap_servers
        self._consumer = Consumer(_reader_settings(bootstrap_servers))
        # The same question asked under read_uncommitted answers with the high watermark.
        self._uncommitted = Consumer({**_reader_settings(bootstrap_servers), "isolation.level": "read_uncommitted"})

    def partition_ids(self) -> list[int]:
        """The topic's partitions; fails clearly when the topic does not exist."""
        from confluent_kafka import KafkaException

        try:
            metadata = self._consumer.list_topics(self._topic, timeout=self._timeout_s)
        except KafkaException as error:
            raise KafkaUnavailableError(f"Kafka at {self._bootstrap} did not answer: {error}") from None
        topic = metadata.topics.get(self._topic)
        if topic is None or topic.error is not None or not topic.partitions:
            raise ValueError(f"topic {self._topic!r} does not exist on {self._bootstrap}")
        return sorted(topic.partitions)

    def bounds(self, partition: int) -> LogBounds:
        from confluent_kafka import KafkaError, KafkaException, TopicPartition

        where = TopicPartition(self._topic, partition)
        deadline = time.monotonic() + self._timeout_s
        while True:
            try:
                earliest, stable_end = self._consumer.get_watermark_offsets(where, timeout=self._timeout_s, cached=False)
                _, written_end = self._uncommitted.get_watermark_offsets(where, timeout=self._timeout_s, cached=False)
                break
            except KafkaException as error:
                # A partition added to the topic a moment ago: the clients' metadata does not know
                # it yet. Refresh it and ask again, within the timeout.
                if error.args[0].code() != KafkaError._UNKNOWN_PARTITION or time.monotonic() > deadline:
                    raise KafkaUnavailableError(
                        f"Kafka at {self._bootstrap} did not answer for partition {partition}: {error}"
                    ) from None
                for client in (self._consumer, self._uncommitted):
                    client.list_topics(self._topic, timeout=self._timeout_s)
                time.sleep(0.2)
        # Asked one after the other: a commit in between can put the stable end past the
        # written end seen a moment earlier.
        return LogBounds(earliest, stable_end, max(written_end, stable_end))

    def _earliest(self, partition: int) -> int:
        """The earliest retained offset alone: one question, not the two of ``bounds``."""
        from confluent_kafka import KafkaException, TopicPartition

        try:
            earliest, _ = self._consumer.get_watermark_offsets(
                TopicPartition(self._topic, partition), timeout=self._timeout_s, cached=False
            )
        except KafkaException as error:
            raise KafkaUnavailableError(f"Kafka at {self._bootstrap} did not answer for partition {partition}: {error}") from None
        return earliest

    def offset_for_time(self, partition: int, timestamp_ms: int) -> int | None:
        """Kafka's time index (offsetsForTimes): the first offset whose timestamp >= timestamp_ms."""
        from confluent_kafka import KafkaException, TopicPartition

        try:
            (answer,) = self._consumer.offsets_for_times(
                [TopicPartition(self._topic, partition, timestamp_ms)], timeout=self._timeout_s
            )
        except KafkaException as error:
            raise KafkaUnavailableError(f"Kafka at {self._bootstrap} did not answer offsetsForTimes: {error}") from None
        return None if answer.offset < 0 else answer.offset

    def next_record(self, partition: int, offset: int) -> LoggedRecord | None:
        """The first data record at or after ``offset`` below the readable end; None if there is
        none. Markers, aborted records and compacted offsets on the way are skipped."""
        for records in read_range(self._bootstrap, self._topic, partition, offset, None, chunk=1, timeout_s=self._timeout_s):
            return LoggedRecord(records[0].offset, records[0].timestamp_ms)
        return None

    def last_record_time(self, partition: int, end: int) -> int | None:
        """The log timestamp of the last data record before offset ``end``; None if none is retained.

        Kafka cannot read backwards: look at windows before ``end`` that grow sixteenfold until
        one holds a data record. Usually the first answers (the record before a commit marker);
        a trailing aborted transaction costs reading it about once.
        """
        earliest = self._earliest(partition)
        window = 16
        while True:
            start = max(earliest, end - window)
            last = None
            for records in read_range(self._bootstrap, self._topic, partition, start, end, timeout_s=self._timeout_s):
                last = records[-1]
            if last is not None:
                return last.timestamp_ms
            if start <= earliest:
                return None
            window *= 16

    def close(self) -> None:
        self._consumer.close()
        self._uncommitted.close()


def read_range(
    bootstrap_servers: str,
    topic: str,
    partition: int,
    start: int,
    end: int | None,
    chunk: int = 10_000,
    timeout_s: float = 60.0,
) -> Iterator[list[RawRecord]]:
    """Yield the data records of offsets [start, end) of one partition, in offset order, in chunks.

    Deterministic: the same range yields the same records on every call (replays never re-read
    "live"). Offsets with no data record (transaction markers, aborted transactions, compacted
    records) are skipped; a range may yield nothing at all. ``end`` None reads to the readable
    end (the last stable offset). The range must lie below the readable end when it is read:
    beyond it, records of an open transaction would make the read wait.
    Raises RetentionLossError when ``start`` is no longer retained, TimeoutError when the broker
    delivers nothing for ``timeout_s`` while the range is unfinished.
    """
    if end is not None and start >= end:
        return

    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    consumer = Consumer(_reader_settings(bootstrap_servers))
    try:
        consumer.assign([TopicPartition(topic, partition, start)])
        next_offset = start
        waited_since = time.monotonic()
        while end is None or next_offset < end:
            wanted = chunk if end is None else min(chunk, end - next_offset)
            messages = consumer.consume(num_messages=wanted, timeout=1.0)
            if not messages:
                if time.monotonic() - waited_since > timeout_s:
                    raise TimeoutError(
                        f"partition {partition} of {topic!r}: nothing received for {timeout_s:.0f}s "
                        f"at offset {next_offset} (range [{start}, {'the readable end' if end is None else end}))"
                    )
                continue
            waited_since = time.monotonic()
            records = []
            finished = False
            for message in messages:
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        # The readable end: what is left of the range holds no data record.
                        finished = True
                        break
                    if error.code() in (KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET):
                        raise RetentionLossError(
                            f"partition {partition} of {topic!r}: offsets from {next_offset} are no longer "
                            f"retained, range [{start}, {end}) cannot be read"
                        )
                    raise KafkaException(error)
                offset = message.offset()
                if end is not None and offset >= end:
                    finished = True
                    break
                records.append(RawRecord(offset, message.timestamp()[1], message.key(), message.value()))
                next_offset = offset + 1
            if records:
                yield records
            if finished:
                return
    finally:
        consumer.close()


def _reader_settings(bootstrap_servers: str) -> dict:
    return {
        "bootstrap.servers": bootstrap_servers,
        # Readers assign partitions explicitly and never commit: positions live in Spark's
        # checkpoint and the ledger, not in a consumer group.
        "group.id": "tidemark-reader",
        "enable.auto.commit": False,
        # Reading past retention must fail loudly, never jump silently to what is left.
        "auto.offset.reset": "error",
        "enable.partition.eof": True,
        "isolation.level": "read_committed",
        "fetch.max.bytes": 52_428_800,
        "queued.max.messages.kbytes": 65_536,
    }
