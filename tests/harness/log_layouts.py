"""Topics the way users have them, and independent readers of what they hold.

Transactional producers (committed, aborted and open transactions) and compacted topics put
offsets in the log that hold no data record. The expected results of the tests come from
readers that share no code with tidemark: a plain read_committed consumer, and Spark's own
Kafka source.
"""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

Offsets = set[tuple[int, int]]


class TransactionalProducer:
    """A transactional producer that remembers the offsets of what it committed and aborted.

    Aborted records are flushed before the abort, so they really are in the log (an abort
    before delivery would leave nothing behind to skip)."""

    def __init__(self, bootstrap: str, topic: str, transactional_id: str):
        self._topic = topic
        self._delivered: list[tuple[int, int]] = []
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "transactional.id": transactional_id,
                "linger.ms": 5,
                "log_level": 3,
                # Longer than any wait of a test (librdkafka's default is 60 s): a transaction a test
                # leaves open on purpose must not be aborted by the broker while a slow machine waits.
                "transaction.timeout.ms": 600_000,
            }
        )
        self._producer.init_transactions(60)
        self.committed: Offsets = set()
        self.aborted: Offsets = set()

    def begin(self, records: list[tuple[int, bytes | None, int]], key: bytes | None = None) -> None:
        """Begin a transaction and write (partition, value, timestamp_ms) records in it."""
        self._producer.begin_transaction()
        for partition, value, timestamp_ms in records:
            self._producer.produce(
                self._topic,
                value=value,
                key=key,
                partition=partition,
                timestamp=timestamp_ms,
                on_delivery=self._on_delivery,
            )
        assert self._producer.flush(60) == 0, "not every record reached the broker"

    @property
    def pending(self) -> Offsets:
        """The offsets written in the transaction that is still open."""
        return set(self._delivered)

    def commit(self) -> None:
        self._producer.commit_transaction(60)
        self.committed.update(self._delivered)
        self._delivered = []

    def abort(self) -> None:
        self._producer.abort_transaction(60)
        self.aborted.update(self._delivered)
        self._delivered = []

    def _on_delivery(self, error, message) -> None:
        assert error is None, f"delivery failed: {error}"
        self._delivered.append((message.partition(), message.offset()))


def readable_offsets(bootstrap: str, topic: str, partitions: int, timeout_s: float = 60) -> Offsets:
    """Every (partition, offset) a read_committed consumer receives, from the earliest offset to
    the last stable offset: the data records the log holds."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "tidemark-test-truth",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        }
    )
    found: Offsets = set()
    try:
        consumer.assign([TopicPartition(topic, p, -2) for p in range(partitions)])  # -2: the earliest offset
        at_end: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while len(at_end) < partitions:
            assert time.monotonic() < deadline, f"the log of {topic!r} was not read to its end in {timeout_s:.0f} s"
            for message in consumer.consume(1_000, timeout=1.0):
                if message.error() is None:
                    found.add((message.partition(), message.offset()))
                elif message.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(message.partition())
                else:
                    raise AssertionError(str(message.error()))
    finally:
        consumer.close()
    return found


def spark_kafka_offsets(spark, bootstrap: str, topic: str) -> list[tuple[int, int]]:
    """The (partition, offset) of every record Spark's own Kafka source reads, read_committed."""
    rows = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("kafka.isolation.level", "read_committed")
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
        .select("partition", "offset")
        .collect()
    )
    return [(row.partition, row.offset) for row in rows]


def lake_offsets(spark, lake) -> list[tuple[int, int]]:
    """(source_partition, source_offset) of every row in events, late and quarantine; a list, so
    that a duplicate shows."""
    found = []
    for table in ("events", "late", "quarantine"):
        rows = spark.read.format("delta").load(str(lake / table)).select("source_partition", "source_offset").collect()
        found.extend((row.source_partition, row.source_offset) for row in rows)
    return found


def routed_pairs(lake, environ: dict[str, str] | None = None) -> dict[tuple[int, int], list[str]]:
    """Every (partition, offset) in events, late and quarantine of the stream folder ``lake``
    (local or s3a://), with the tables holding it: a pair written twice shows twice. Read with
    delta-rs, with the storage settings ``environ`` names (default: this process's)."""
    from connectors.lake_storage import open_delta_table

    found: dict[tuple[int, int], list[str]] = {}
    for table in ("events", "late", "quarantine"):
        rows = open_delta_table(f"{str(lake).rstrip('/')}/{table}", environ=environ).to_pyarrow_table(
            columns=["source_partition", "source_offset"]
        )
        for pair in zip(rows["source_partition"].to_pylist(), rows["source_offset"].to_pylist()):
            found.setdefault(pair, []).append(table)
    return found
