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
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from connectors import kafka_lookups
from connectors.kafka_clients import KafkaUnavailableError, Refusals, access_denied_codes, client_settings
from tidemark.aligned_slices import LoggedRecord
from tidemark.retention_loss import RetentionLossError


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


class RawRecord(NamedTuple):
    """A data record as read: a tidemark.partitioned_log.LogRecord whose position is its offset.
    A named tuple, not a frozen dataclass: one is made per record read, and a frozen
    dataclass's constructor costs 2.7 times as much (1.36 against 0.51 µs here). The source
    reads its fields in this order (spark_jobs.log_source.rows, one transpose per batch)."""

    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    # Kafka's record headers as the producer wrote them; None when the record has none.
    headers: tuple[tuple[str, bytes | None], ...] | None = None

    @property
    def position(self) -> int:
        return self.offset


class KafkaLog:
    """Metadata and bounds of one topic; one instance per driver-side reader, reused across batches.

    It is the planner's time index (tidemark.aligned_slices.BatchedLogTimeIndex): the planner asks
    the same question of all partitions of a step, and each question here costs the same for one
    partition or thousands: one ListOffsets or offsetsForTimes request (answered for every
    partition of a broker at once), or one short-lived reader assigned all the partitions asked.
    Its clients live as long as it does: a look-up never opens a client of its own. They are
    made at the first question: a Spark task that only reads ranges never makes them.

    It is the Kafka adapter of tidemark.partitioned_log.PartitionedLog (opened by
    connectors.partitioned_logs.open_log from a KafkaConnection).
    """

    def __init__(self, bootstrap_servers: str, topic: str, timeout_s: float = 30.0, *, connection=None):
        from tidemark.log_connection import KafkaConnection

        self.connection = connection or KafkaConnection(bootstrap_servers, topic)
        self._topic = topic
        self._timeout_s = timeout_s
        self._bootstrap = bootstrap_servers
        self._clients = None
        self._reach = None  # (KafkaAccess, Refusals), made with the first client
        self._shares_clients = False  # another log's clients (sibling): it closes them

    @classmethod
    def of(cls, connection, timeout_s: float = 30.0) -> KafkaLog:
        """The log a tidemark.log_connection.KafkaConnection names."""
        return cls(connection.bootstrap_servers, connection.topic, timeout_s, connection=connection)

    def sibling(self, connection) -> KafkaLog:
        """The log of another topic on the same brokers, connected the same way (``connection``,
        a KafkaConnection), asked through this log's clients: a family's look asks about
        hundreds of topics with one consumer and one admin client. Closing the sibling leaves
        the clients open; closing this log closes them."""
        if (connection.bootstrap_servers, connection.kafka_conn_id) != (
            self.connection.bootstrap_servers,
            self.connection.kafka_conn_id,
        ):
            raise ValueError(f"topic {connection.topic!r} is not on the brokers of {self._topic!r} as connected")
        sibling = KafkaLog.of(connection, self._timeout_s)
        sibling._reach = self._reached()
        sibling._clients = self._opened()
        sibling._shares_clients = True
        return sibling

    @property
    def timeout_s(self) -> float:
        """How long (s) a question to the broker may take before it fails."""
        return self._timeout_s

    @property
    def _access(self):
        """The brokers and the settings that secure them (tidemark.kafka_access), read from this
        process's environment once, at the first client."""
        return self._reached()[0]

    @property
    def _refusals(self) -> Refusals:
        return self._reached()[1]

    def _check_refused(self) -> None:
        """Raise KafkaRefusedError when the brokers refused this log's connection. librdkafka
        hands its errors to the callback only while a client is polled: the admin client's poll
        serves them, and fetches nothing."""
        self._admin.poll(0)
        self._refusals.check()

    def _reached(self) -> tuple:
        if self._reach is None:
            access = self.connection.access()
            self._reach = (access, Refusals(self._bootstrap, access.described()))
        return self._reach

    @property
    def _consumer(self):
        return self._opened()[0]

    @property
    def _admin(self):
        return self._opened()[1]

    def _opened(self) -> tuple:
        if self._clients is None:
            from confluent_kafka import Consumer
            from confluent_kafka.admin import AdminClient

            self._clients = (
                Consumer(client_settings(self._access, _READER_SETTINGS, self._refusals)),
                AdminClient(client_settings(self._access, {}, self._refusals)),
            )
        return self._clients

    def partition_ids(self) -> list[int]:
        """The topic's partitions; fails clearly when the topic does not exist."""
        from confluent_kafka import KafkaException

        deadline = time.monotonic() + self._timeout_s
        while True:
            # In slices: a refused connection (credentials, certificate) is said at once, not
            # after the whole timeout.
            try:
                # The reader's own metadata: the questions that follow are the reader's too.
                metadata = self._consumer.list_topics(self._topic, timeout=min(1.0, self._timeout_s))
                self._refusals.answered()
                break
            except KafkaException as error:
                self._check_refused()
                if time.monotonic() >= deadline:
                    raise KafkaUnavailableError(f"Kafka at {self._bootstrap} did not answer: {error}") from None
        topic = metadata.topics.get(self._topic)
        if topic is None or topic.error is not None or not topic.partitions:
            raise ValueError(f"topic {self._topic!r} does not exist on {self._bootstrap}")
        return sorted(topic.partitions)

    def bounds(self, partition: int) -> LogBounds:
        return self.partition_bounds([partition])[partition]

    def partition_bounds(self, partitions: Iterable[int] | None = None) -> dict[int, LogBounds]:
        """The bounds of ``partitions`` (default: all of the topic's), keyed by partition.

        Three ListOffsets questions (earliest; latest under read_committed, the last stable
        offset; latest under read_uncommitted, the high watermark), sent together: one round
        trip to each partition's leader, whatever the number of partitions.
        """
        from confluent_kafka import IsolationLevel, KafkaException
        from confluent_kafka.admin import OffsetSpec

        partitions = self.partition_ids() if partitions is None else sorted(set(partitions))
        if not partitions:
            return {}
        deadline = time.monotonic() + self._timeout_s
        while True:
            try:
                earliest, stable_end, written_end = (
                    self._list_offsets(partitions, spec, isolation)
                    for spec, isolation in (
                        (OffsetSpec.earliest(), IsolationLevel.READ_COMMITTED),
                        (OffsetSpec.latest(), IsolationLevel.READ_COMMITTED),
                        (OffsetSpec.latest(), IsolationLevel.READ_UNCOMMITTED),
                    )
                )
                answers = {
                    name: _answers(futures, self._timeout_s, self._check_refused)
                    for name, futures in (("earliest", earliest), ("stable", stable_end), ("written", written_end))
                }
                self._refusals.answered()
                break
            except NoOffsetYet as error:
                if time.monotonic() > deadline:
                    raise KafkaUnavailableError(
                        f"Kafka at {self._bootstrap} did not answer ListOffsets for topic {self._topic!r} "
                        f"(asked for {self._timeout_s:.0f} s): {error}"
                    ) from None
                time.sleep(0.2)
            except KafkaException as error:
                # Asked again, within the timeout, where the answer may come a moment later: a
                # partition added to the topic a moment ago (the admin client's metadata does not
                # know it yet), or a broker that is restarting (no leader yet, connection
                # refused). Past the timeout, or for any other error, the run fails naming the broker.
                self._check_refused()
                code = error.args[0].code() if error.args and hasattr(error.args[0], "code") else None
                if code not in _transient_errors() or time.monotonic() > deadline:
                    raise KafkaUnavailableError(
                        f"Kafka at {self._bootstrap} did not answer ListOffsets for topic {self._topic!r} "
                        f"(asked for {self._timeout_s:.0f} s): {error}"
                    ) from None
                try:
                    self._admin.list_topics(self._topic, timeout=max(0.1, deadline - time.monotonic()))
                except KafkaException:
                    pass  # still down: the next question says so, or the deadline does
                time.sleep(0.5)
        # Asked at the same time, answered independently: a commit in between can put the
        # stable end past the written end seen a moment earlier.
        return {
            p: LogBounds(answers["earliest"][p], answers["stable"][p], max(answers["written"][p], answers["stable"][p]))
            for p in partitions
        }

    def _list_offsets(self, partitions: list[int], spec, isolation) -> dict:
        from confluent_kafka import TopicPartition

        return self._admin.list_offsets(
            {TopicPartition(self._topic, p): spec for p in partitions},
            isolation_level=isolation,
            request_timeout=self._timeout_s,
        )

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
            self._check_refused()
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
        return self.first_records(offsets)

    def last_record_time(self, partition: int, end: int) -> int | None:
        """The log timestamp of the last data record before offset ``end``; None if none is retained."""
        return self.last_record_times({partition: end})[partition]

    def last_record_times(self, ends: Mapping[int, int]) -> dict[int, int | None]:
        """``last_record_time`` of several partitions ({partition: end}), read by one reader a round.

        Kafka cannot read backwards: look at windows before each end that grow sixteenfold until
        one holds a data record. Usually the first answers (the record before a commit marker);
        a trailing aborted transaction costs reading it about once.
        """
        earliest = {p: b.earliest for p, b in self.partition_bounds(ends).items()}
        answers: dict[int, int | None] = {p: None for p, end in ends.items() if end <= earliest[p]}
        pending = {p: end for p, end in ends.items() if p not in answers}
        window = 16
        while pending:
            starts = {p: max(earliest[p], end - window) for p, end in pending.items()}
            last: dict[int, int] = {}
            ranges = {p: (starts[p], end) for p, end in pending.items()}
            for partition, records in read_ranges(
                self._bootstrap, self._topic, ranges, timeout_s=self._timeout_s, reach=self._reached()
            ):
                last[partition] = records[-1].timestamp_ms
            for p in list(pending):
                if p in last or starts[p] <= earliest[p]:
                    answers[p] = last.get(p)
                    del pending[p]
            window *= 16
        return answers

    # -- the rest of tidemark.partitioned_log.PartitionedLog ----------------------------------------

    def first_positions(self, partitions: Iterable[int], starting: str = "earliest") -> dict[int, int]:
        """Each partition's earliest retained offset, or its readable end (``starting="latest"``)."""
        bounds = self.partition_bounds(partitions)
        return {p: b.earliest if starting == "earliest" else b.end for p, b in bounds.items()}

    def look(self, positions: Mapping[int, int], target_ms: int | None = None, max_records: int | None = None) -> dict:
        """Every partition's bounds now (one ListOffsets round trip): Kafka reads nothing ahead."""
        from tidemark.partitioned_log import PartitionView

        return {p: PartitionView(b.earliest, b.end, b.written_end) for p, b in self.partition_bounds(positions).items()}

    def lost_to_retention(self, state) -> tuple:
        """[position, earliest retained) of every partition whose log now starts past its position."""
        from tidemark.retention_loss import lost_ranges

        positions = state.positions()
        return lost_ranges(positions, {p: b.earliest for p, b in self.partition_bounds(positions).items()})

    def in_hand(self, partition: int, start: int, end: int) -> None:
        """None: a task reads its ranges from the broker (the driver holds no records)."""
        return None

    def available_now_end(self):
        """The readable ends now: an available_now run reads up to them and no further."""
        ends = {p: b.end for p, b in self.partition_bounds().items()}
        return lambda partition, end: min(end, ends.get(partition, end))

    def progress(self) -> dict:
        return {}

    def read_ranges(self, ranges: Mapping[int, tuple[int, int]]) -> Iterator[tuple[int, list[RawRecord]]]:
        """The data records of each {partition: (start, end)}: see the module's ``read_ranges``."""
        return read_ranges(
            self._bootstrap, self._topic, ranges, timeout_s=max(60.0, self._timeout_s), reach=self._reached()
        )

    def first_records(self, offsets: Mapping[int, int]) -> dict[int, LoggedRecord | None]:
        """The module's ``first_records`` for this topic, within this log's timeout."""
        return first_records(self._bootstrap, self._topic, offsets, timeout_s=self._timeout_s, reach=self._reached())

    # -- look-ups (connectors.kafka_lookups) -------------------------------------------------------

    def bounds_now(self, positions: Mapping[int, int], finished: Iterable[int], check_retention: bool) -> dict:
        return kafka_lookups.bounds_now(self, positions, finished, check_retention)

    def look_before_run(self, ledger: Mapping) -> dict:
        return kafka_lookups.look_before_run(self, ledger)

    def unread_now(self, positions: Mapping[int, int], finished: Iterable[int]):
        return kafka_lookups.unread_now(self, positions, finished)

    def plan_recovery(self, request):
        return kafka_lookups.plan_recovery(self, request)

    def backfill_indexes(self, request) -> dict:
        return kafka_lookups.backfill_indexes(self, request)

    def close(self) -> None:
        if self._clients is not None and not self._shares_clients:
            self._clients[0].close()
        self._clients = None


def _transient_errors() -> frozenset:
    from confluent_kafka import KafkaError

    return frozenset(
        {
            KafkaError._UNKNOWN_PARTITION,
            KafkaError.UNKNOWN_TOPIC_OR_PART,  # a partition just added
            # A broker restarting: gone, no partition leader yet, or not the leader any more.
            KafkaError._NOENT,
            KafkaError._TRANSPORT,
            KafkaError._ALL_BROKERS_DOWN,
            KafkaError.LEADER_NOT_AVAILABLE,
            KafkaError.NOT_LEADER_FOR_PARTITION,
            KafkaError._TIMED_OUT,
            KafkaError.REQUEST_TIMED_OUT,
            # A broker back from a restart: the client's leader epoch is older than the broker's
            # until its metadata is refreshed (seen in the suite), or a new leader has no offsets yet.
            KafkaError.FENCED_LEADER_EPOCH,
            KafkaError.UNKNOWN_LEADER_EPOCH,
            KafkaError.OFFSET_NOT_AVAILABLE,
            KafkaError.BROKER_NOT_AVAILABLE,
        }
    )


def _answers(futures: Mapping, timeout_s: float, check=lambda: None) -> dict[int, int]:
    """{partition: offset} of a ListOffsets call's futures; raises the first partition's error,
    and ``check()``'s (a refused connection) while it waits."""
    import concurrent.futures

    deadline = time.monotonic() + timeout_s
    while True:
        _, pending = concurrent.futures.wait(list(futures.values()), timeout=min(0.5, timeout_s))
        if not pending:
            break
        check()
        if time.monotonic() >= deadline:
            break  # result() below raises the timeout
    offsets = {where.partition: future.result(timeout=0).offset for where, future in futures.items()}
    unanswered = sorted(partition for partition, offset in offsets.items() if offset < 0)
    if unanswered:
        raise NoOffsetYet(unanswered)
    return offsets


class NoOffsetYet(Exception):
    """A ListOffsets answer without an error but without an offset either (-1001, OFFSET_INVALID),
    as a broker gave one while the client's OAuth token was being refreshed. Earliest and latest
    are never negative: planned with, it would read as an empty or rewound partition."""

    def __init__(self, partitions: list[int]):
        super().__init__(f"ListOffsets gave no offset for partitions {partitions}")
        self.partitions = partitions


def read_range(
    bootstrap_servers: str,
    topic: str,
    partition: int,
    start: int,
    end: int | None,
    chunk: int = 10_000,
    timeout_s: float = 60.0,
    reach: tuple | None = None,
) -> Iterator[list[RawRecord]]:
    """Yield the data records of offsets [start, end) of one partition, in offset order, in chunks.

    ``read_ranges`` of one partition: see there for what is read and what is raised.
    """
    for _, records in read_ranges(bootstrap_servers, topic, {partition: (start, end)}, chunk, timeout_s, reach):
        yield records


def read_ranges(
    bootstrap_servers: str,
    topic: str,
    ranges: Mapping[int, tuple[int, int | None]],
    chunk: int = 10_000,
    timeout_s: float = 60.0,
    reach: tuple | None = None,
) -> Iterator[tuple[int, list[RawRecord]]]:
    """Yield (partition, records) for the data records of each {partition: (start, end)} range,
    in offset order within a partition, in chunks; partitions interleave. One reader for all.

    Deterministic: the same ranges yield the same records on every call (replays never re-read
    "live"). Offsets with no data record (transaction markers, aborted transactions, compacted
    records) are skipped; a range may yield nothing at all. ``end`` None reads to the readable
    end (the last stable offset). A range must lie below the readable end when it is read:
    beyond it, records of an open transaction would make the read wait.
    Raises RetentionLossError when a range's start is no longer retained, TimeoutError when the
    broker delivers nothing for ``timeout_s`` while a range is unfinished, KafkaRefusedError at
    once when the brokers refuse the connection. ``reach``: (tidemark.kafka_access.KafkaAccess,
    connectors.kafka_clients.Refusals) of a secured connection (KafkaLog's); None: PLAINTEXT.
    """
    todo = {p: (start, end) for p, (start, end) in ranges.items() if end is None or start < end}
    if not todo:
        return

    from confluent_kafka import Consumer, TopicPartition

    next_offsets = {p: start for p, (start, _) in todo.items()}

    def unfinished() -> str:
        return ", ".join(
            f"partition {p} at offset {next_offsets[p]} (range [{todo[p][0]}, "
            f"{'the readable end' if todo[p][1] is None else todo[p][1]}))"
            for p in sorted(todo)
        )

    def batch_size() -> int:
        # consume() returns when it has this many messages or at the timeout: never ask for more
        # than the ranges can still deliver, since offsets without data (markers, aborted
        # records) mean fewer messages than offsets.
        remaining = sum(end - next_offsets[p] if end is not None else chunk for p, (_, end) in todo.items())
        return max(1, min(chunk, remaining))

    access, refusals = reach or _plaintext(bootstrap_servers)
    consumer = Consumer(client_settings(access, _READER_SETTINGS, refusals))
    try:
        consumer.assign([TopicPartition(topic, p, start) for p, (start, _) in todo.items()])
        fetches = _fetches(
            consumer,
            topic,
            todo,
            batch_size,
            poll_s=0.1,
            timeout_s=timeout_s,
            silence=lambda: f"{topic!r}: nothing received for {timeout_s:.0f}s: {unfinished()}",
            lost=lambda p: _lost_while_reading(consumer, bootstrap_servers, topic, p, next_offsets[p], *todo[p]),
            check=refusals.check,
            answered=refusals.answered,
            refused=lambda error: refusals.reading_refused(topic, error),
        )
        for fetch in fetches:
            received: dict[int, list[RawRecord]] = {}
            for partition, message in fetch:
                end = todo[partition][1]
                if message is None or (end is not None and message.offset() >= end):
                    del todo[partition]  # the readable end, or the range's: the rest holds no record of it
                    continue
                offset = message.offset()
                headers = message.headers()
                received.setdefault(partition, []).append(
                    RawRecord(
                        offset,
                        message.timestamp()[1],
                        message.key(),
                        message.value(),
                        tuple(headers) if headers else None,
                    )
                )
                next_offsets[partition] = offset + 1
                if end is not None and offset + 1 >= end:
                    del todo[partition]
            yield from received.items()
    finally:
        consumer.close()


def _fetches(
    consumer,
    topic: str,
    open_partitions,
    batch_size,
    poll_s: float,
    timeout_s: float,
    silence,
    lost,
    check=lambda: None,
    answered=lambda: None,
    refused=None,
):
    """The consume loop of a reader with assigned partitions, shared by ``read_ranges`` and
    ``first_records``: yields one iterator per consume() call over its messages, as
    (partition, message), or (partition, None) for a partition's end-of-partition event (its
    readable end). Only partitions still in ``open_partitions`` (a set or dict of partition
    numbers) are passed on: the caller removes a partition from it, even mid-fetch, once it is
    done; after the fetch the loop unassigns it (so the others' records are not queued behind
    it) and ends when none is open.

    ``batch_size()``: how many messages to ask the next consume() for; it returns with them or
    after ``poll_s`` seconds. Raises TimeoutError(``silence()``) when nothing arrives for
    ``timeout_s`` seconds while a partition is open, ``lost(partition)`` (a RetentionLossError)
    when a partition's position is no longer retained, ``check()``'s error (a refused connection)
    while nothing arrives, ``refused(error)`` when the brokers refuse to let the connection read
    the topic (its ACLs; KafkaException when None), and KafkaException for any other error;
    ``answered()`` once anything arrives.
    """
    from confluent_kafka import TopicPartition

    waited_since = time.monotonic()
    while open_partitions:
        messages = consumer.consume(num_messages=batch_size(), timeout=poll_s)
        if not messages:
            check()
            if time.monotonic() - waited_since > timeout_s:
                raise TimeoutError(silence())
            continue
        answered()
        waited_since = time.monotonic()
        fetched = set(open_partitions)
        yield _open_messages(messages, open_partitions, lost, refused)
        done = fetched.difference(open_partitions)
        if done:
            consumer.incremental_unassign([TopicPartition(topic, p) for p in sorted(done)])


def _open_messages(messages, open_partitions, lost, refused=None) -> Iterator[tuple[int, object]]:
    """The messages of partitions still open, checked as they are reached (a partition the
    caller closed earlier in the same fetch is skipped, its errors included): see ``_fetches``."""
    from confluent_kafka import KafkaError, KafkaException

    for message in messages:
        partition = message.partition()
        if partition not in open_partitions:
            continue  # done: fetched before it was unassigned
        error = message.error()
        if error is None:
            yield partition, message
        elif error.code() == KafkaError._PARTITION_EOF:
            yield partition, None
        elif error.code() in (KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET):
            raise lost(partition)
        elif refused is not None and error.code() in access_denied_codes():
            raise refused(error)
        else:
            raise KafkaException(error)


def _lost_while_reading(
    consumer, servers: str, topic: str, partition: int, offset: int, start: int, end: int | None
) -> RetentionLossError:
    """The error for a range whose next offset left the log between planning and reading (the
    planner stops before a loss it can see; this is the race after it): with the exact lost
    offsets [offset, earliest retained) when the broker says where the log starts now."""
    from confluent_kafka import KafkaException, TopicPartition

    from tidemark.log_connection import KafkaConnection
    from tidemark.retention_loss import LostRange, retention_loss_message

    try:
        earliest, _ = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=5, cached=False)
    except KafkaException:
        earliest = None
    if earliest is None or earliest <= offset:
        return RetentionLossError(
            f"partition {partition} of {topic!r}: offsets from {offset} are no longer retained, range [{start}, {end}) "
            "cannot be read"
        )
    lost = (LostRange(partition, offset, earliest),)
    return RetentionLossError(retention_loss_message(KafkaConnection(servers, topic), lost), lost)


def first_records(
    bootstrap_servers: str,
    topic: str,
    offsets: Mapping[int, int],
    timeout_s: float = 60.0,
    reach: tuple | None = None,
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
    from confluent_kafka import Consumer, TopicPartition

    answers: dict[int, LoggedRecord | None] = {}
    if not offsets:
        return answers
    unanswered = set(offsets)
    access, refusals = reach or _plaintext(bootstrap_servers)
    consumer = Consumer(client_settings(access, _PROBE_SETTINGS, refusals))
    try:
        consumer.assign([TopicPartition(topic, partition, offset) for partition, offset in offsets.items()])
        # As many messages as answers are missing, waiting briefly: consume() returns when it has
        # them all or at the timeout, and a partition at its readable end sends one
        # end-of-partition event, then nothing. Thousands of partitions are answered in a few
        # calls, not one call per message.
        fetches = _fetches(
            consumer,
            topic,
            unanswered,
            lambda: len(unanswered),
            poll_s=0.05,
            timeout_s=timeout_s,
            silence=lambda: (
                f"partitions {sorted(unanswered)} of {topic!r}: nothing received for {timeout_s:.0f}s "
                f"from offsets {[offsets[p] for p in sorted(unanswered)]}"
            ),
            lost=lambda p: RetentionLossError(
                f"partition {p} of {topic!r}: offset {offsets.get(p)} is no longer retained"
            ),
            check=refusals.check,
            answered=refusals.answered,
            refused=lambda error: refusals.reading_refused(topic, error),
        )
        for fetch in fetches:
            for partition, message in fetch:
                if message is None:
                    answers[partition] = None  # only offsets without data before the readable end
                elif message.offset() < offsets[partition]:
                    continue  # before the offset asked: not delivered by a fetch from it, never an answer
                else:
                    answers[partition] = LoggedRecord(message.offset(), message.timestamp()[1])
                unanswered.discard(partition)
    finally:
        consumer.close()
    return answers


# A range reader's own settings (connectors.kafka_clients puts the connection's security
# settings under them, so that no connection can change how tidemark reads).
_READER_SETTINGS = {
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
    # Ranges end at or below the readable end, where the broker holds an empty fetch this long
    # before the end-of-partition event can come (500 ms by default): a range that ends in
    # markers or aborted records would wait it out. Fetches with data return at once anyway.
    "fetch.wait.max.ms": 50,
}

# A reader that wants one record per partition, not a range: fetch little, wait little. With the
# reader settings a fresh consumer fetches (and on close discards) up to 1 MiB per partition to
# hand out one record, ~20 ms a question; 64 KiB answers in ~4 ms. The broker still returns a
# whole record batch larger than that (Kafka's fetch always makes progress). At the readable end
# the broker holds an empty fetch for fetch.wait.max.ms (500 ms by default) before the
# end-of-partition event can be sent; 10 ms answers "no record" sooner.
_PROBE_SETTINGS = {**_READER_SETTINGS, "max.partition.fetch.bytes": 65_536, "fetch.wait.max.ms": 10}


def _plaintext(bootstrap_servers: str) -> tuple:
    """(access, refusals) of a connection without security settings."""
    from tidemark.kafka_access import KafkaAccess

    access = KafkaAccess(bootstrap_servers)
    return access, Refusals(bootstrap_servers, access.described())
