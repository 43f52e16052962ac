"""The topic the generator writes to: checked before the first record, then fed at full speed.

Every record goes to an explicit partition (its profile decides its rate) with the Kafka
timestamp set to the given time in ms (CreateTime = event time), which is what lets the persist
job plan event-time slices from the log's time index.

With a transaction size, records are written in transactions of that many records, as
exactly-once producers write them: every commit puts a marker in each partition it touched, an
offset that holds no record and carries the wall clock of the commit, not an event time.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from confluent_kafka import KafkaException, Producer

# Throughput settings: batches fill for up to 20 ms, and lz4 is cheap enough not to slow the
# Python side. Idempotence keeps a retried batch from duplicating or reordering a partition.
_PRODUCER_SETTINGS = {
    "linger.ms": 20,
    "batch.num.messages": 100_000,
    "batch.size": 4_000_000,
    "queue.buffering.max.messages": 1_000_000,
    "compression.type": "lz4",
    "enable.idempotence": True,
    # Only failures come back as delivery reports: one Python callback per record would halve
    # the rate.
    "delivery.report.only.error": True,
    # A metadata request must never create the topic behind our back with the broker's defaults.
    "allow.auto.create.topics": False,
}

_PROBE_TIMEOUT_S = 10
# How often (records) to serve the producer's callbacks while the queue has room.
_POLL_EVERY = 10_000


class KafkaTargetError(Exception):
    """The broker is unreachable, the topic is missing or too small, or records were not delivered.

    The message says what was wrong and what to do; the CLI prints it without a traceback.
    """


class KafkaTarget:
    """Produces records to explicit partitions of one topic and reports delivery failures at ``close``."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        partitions_needed: int,
        transaction_size: int | None = None,
        security: Mapping[str, object] | None = None,
    ):
        """Check the broker and topic first (KafkaTargetError if not ready), then open the
        producer. ``security``: the settings that secure the brokers (tidemark.kafka_access)."""
        self.bootstrap = bootstrap
        self.topic = topic
        security = dict(security or {})
        _check_topic(bootstrap, topic, partitions_needed, security)
        self._failures = 0
        self._first_failure: str | None = None
        self._since_poll = 0
        self._transaction_size = transaction_size
        self._in_transaction = 0
        settings = {**security, "bootstrap.servers": bootstrap, "on_delivery": self._on_delivery, **_PRODUCER_SETTINGS}
        if transaction_size is not None:
            settings["transactional.id"] = f"tidemark-generate-{topic}-{uuid.uuid4().hex[:8]}"
        self._producer = Producer(settings)
        if transaction_size is not None:
            try:
                self._producer.init_transactions(_PROBE_TIMEOUT_S * 3)
            except KafkaException as error:
                raise KafkaTargetError(f"the broker at {bootstrap} refused a transactional producer: {error}") from None
            self._producer.begin_transaction()

    def send(self, partition: int, key: bytes, value: bytes, timestamp_ms: int) -> None:
        """Queue one record; when the local queue is full, wait for deliveries to make room."""
        while True:
            try:
                self._producer.produce(self.topic, value, key, partition=partition, timestamp=timestamp_ms)
                break
            except BufferError:
                self._producer.poll(0.05)
        self._since_poll += 1
        if self._since_poll >= _POLL_EVERY:
            self._since_poll = 0
            self._producer.poll(0)
        if self._transaction_size is not None:
            self._in_transaction += 1
            if self._in_transaction >= self._transaction_size:
                self._commit()
                self._producer.begin_transaction()

    def _commit(self) -> None:
        """Commit the open transaction (it flushes its records first)."""
        try:
            self._producer.commit_transaction(60)
        except KafkaException as error:
            raise KafkaTargetError(f"a transaction to topic {self.topic!r} could not be committed: {error}") from None
        self._in_transaction = 0

    def wait(self, seconds: float) -> None:
        """Pause up to ``seconds`` while serving delivery callbacks (live mode's clock wait)."""
        self._producer.poll(seconds)

    def close(self) -> None:
        """Flush everything queued (committing the open transaction); raise KafkaTargetError if any
        record was not delivered."""
        if self._transaction_size is not None:
            self._commit()
        remaining = self._producer.flush(60)
        if remaining:
            raise KafkaTargetError(f"{remaining} records were still undelivered to {self.bootstrap} after 60 s")
        if self._failures:
            raise KafkaTargetError(
                f"{self._failures} records could not be delivered to topic {self.topic!r}; first error: "
                f"{self._first_failure}"
            )

    def _on_delivery(self, error, message) -> None:
        if error is not None:
            self._failures += 1
            if self._first_failure is None:
                self._first_failure = str(error)


def _check_topic(bootstrap: str, topic_name: str, partitions_needed: int, security: Mapping[str, object]) -> None:
    """Raise KafkaTargetError unless the broker answers and the topic has ``partitions_needed`` partitions.

    Waits at most 10 s for the broker. The probe uses its own client with logging off, so an
    absent broker gives one clear message instead of a screen of connection-refused lines.
    """
    probe = Producer({**security, "bootstrap.servers": bootstrap, "log_level": 0, "allow.auto.create.topics": False})
    try:
        # All topics, not just ours: asking for one by name may auto-create it on the broker.
        metadata = probe.list_topics(timeout=_PROBE_TIMEOUT_S)
    except KafkaException:
        raise KafkaTargetError(
            f"Kafka at {bootstrap} is not reachable: start it with `make up` or "
            f"`tidemark up kafka`, or point --bootstrap at a running broker"
        ) from None
    topic = metadata.topics.get(topic_name)
    if topic is None or topic.error is not None:
        raise KafkaTargetError(
            f"topic {topic_name!r} does not exist at {bootstrap}: create it with "
            f"`tidemark create-topic {topic_name} --partitions {partitions_needed}`"
        )
    if len(topic.partitions) < partitions_needed:
        raise KafkaTargetError(
            f"topic {topic_name!r} at {bootstrap} has {len(topic.partitions)} partitions but {partitions_needed} "
            f"are needed (one per profile, and at least the stream's configured partitions): recreate it with "
            f"`tidemark create-topic {topic_name} --partitions {partitions_needed}` after deleting it, "
            f"or fix source.partitions in the stream configuration"
        )
