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
from typing import Iterable, Iterator, Mapping

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
    """Metadata and bounds of one topic; one instance per driver-side reader, reused across batches.

    It is the planner's time index (tidemark.aligned_slices.BatchedLogTimeIndex): the planner asks
    the same question of all partitions of a step, and each question here is a broker round trip
    (offsetsForTimes) or a short-lived reader (next record), so it answers all partitions at once.
    """

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
        """Kafka's time index (offsetsForTimes): the first offset whose timestamp >= timestamp_ms;
        None if there is none. The offset may be a transaction marker's (see the module doc)."""
        return self.offsets_for_time([partition], timestamp_ms)[partition]

    def offsets_for_time(self, partitions: Iterable[int], timestamp_ms: int) -> dict[int, int | None]:
        """``offset_for_time`` of several partitions, in one offsetsForTimes request."""
        from confluent_kafka import KafkaException, TopicPartition

        asked = [TopicPartition(self._topic, partition, timestamp_ms) for partition in partitions]
        if not asked:
            return {}
        try:
            answers = self._consumer.offsets_for_times(asked, timeout=self._timeout_s)
        except KafkaException as error:
            raise KafkaUnavailableError(f"Kafka at {self._bootstrap} did not answer offsetsForTimes: {error}") from None
        for answer in answers:
            # A partition's error must not read as "no offset at that time" (which plans to the log end).
            if answer.error is not None:
                raise KafkaUnavailableError(
                    f"Kafka at {self._bootstrap} did not answer offsetsForTimes for partition {answer.partition}: {answer.error}"
                )
        # A negative offset (OFFSET_END): no record of the partition has a timestamp >= timestamp_ms.
        return {answer.partition: None if answer.offset < 0 else answer.offset for answer in answers}

    def next_record(self, partition: int, offset: int) -> LoggedRecord | None:
        """The first data record at or after ``offset`` below the readable end; None if there is
        none. Markers, aborted records and compacted offsets on the way are skipped."""
        return self.next_records({partition: offset})[partition]

    def next_records(self, offsets: Mapping[int, int]) -> dict[int, LoggedRecord | None]:
        """``next_record`` of several partitions ({partition: offset}), read by one reader."""
        return first_records(self._bootstrap, self._topic, offsets, timeout_s=self._timeout_s)

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


def first_records(
    bootstrap_servers: str, topic: str, offsets: Mapping[int, int], timeout_s: float = 60.0
) -> dict[int, LoggedRecord | None]:
    """For each {partition: offset}, the first data record at or after that offset below the
    readable end (the last stable offset), or None when there is none: read_range(partition,
    offset, None) stopped at its first record, for several partitions by one reader.

    Offsets with no data record (transaction markers, aborted transactions under read_committed,
    compacted offsets) are skipped, as the reader never receives them. Raises RetentionLossError
    when an offset is no longer retained, TimeoutError when the broker delivers nothing for
    ``timeout_s`` while answers are missing.

    A fresh reader each call (~4 ms for four partitions, measured), so that no position, queued
    record or end-of-partition event carries over from one question to the next. One reader
    reused with the reader settings took ~100 ms a question; with these settings reuse would
    save about 2 ms a call, not worth that state.
    """
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    answers: dict[int, LoggedRecord | None] = {}
    if not offsets:
        return answers
    consumer = Consumer(_probe_settings(bootstrap_servers))
    try:
        consumer.assign([TopicPartition(topic, partition, offset) for partition, offset in offsets.items()])
        waited_since = time.monotonic()
        while len(answers) < len(offsets):
            # One message at a time: asking for more would wait for them, and a partition at its
            # readable end sends one end-of-partition event, then nothing.
            messages = consumer.consume(num_messages=1, timeout=1.0)
            if not messages:
                if time.monotonic() - waited_since > timeout_s:
                    missing = sorted(set(offsets) - set(answers))
                    raise TimeoutError(
                        f"partitions {missing} of {topic!r}: nothing received for {timeout_s:.0f}s "
                        f"from offsets {[offsets[p] for p in missing]}"
                    )
                continue
            waited_since = time.monotonic()
            for message in messages:
                partition = message.partition()
                if partition in answers:
                    continue  # already answered; fetched before it was unassigned
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        answers[partition] = None  # only offsets without data before the readable end
                    elif error.code() in (KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET):
                        raise RetentionLossError(
                            f"partition {partition} of {topic!r}: offset {offsets.get(partition)} is no longer retained"
                        )
                    else:
                        raise KafkaException(error)
                elif message.offset() < offsets[partition]:
                    continue  # before the offset asked: not delivered by a fetch from it, never an answer
                else:
                    answers[partition] = LoggedRecord(message.offset(), message.timestamp()[1])
                # Answered: stop fetching it, so the others' answers are not queued behind its records.
                consumer.incremental_unassign([TopicPartition(topic, partition)])
    finally:
        consumer.close()
    return answers


def _probe_settings(bootstrap_servers: str) -> dict:
    """A reader that wants one record per partition, not a range: fetch little, wait little.

    With the reader settings a fresh consumer fetches (and on close discards) up to 1 MiB per
    partition to hand out one record, ~20 ms a question; 64 KiB answers in ~4 ms. The broker
    still returns a whole record batch larger than that (Kafka's fetch always makes progress).
    At the readable end the broker holds an empty fetch for fetch.wait.max.ms (500 ms by
    default) before the end-of-partition event can be sent; 10 ms answers "no record" sooner.
    """
    return {**_reader_settings(bootstrap_servers), "max.partition.fetch.bytes": 65_536, "fetch.wait.max.ms": 10}


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
