"""Where a stream's log is and how to speak of it: one typed value per kind of log.

A ``LogConnection`` is what crosses every process boundary about the log (the Spark source's
options, the executors' reads, the planner's look-ups): built once from the stream's config
(``stream.source.connection()``), encoded by msgspec with its ``kind`` tag, and opened into a
client by the one factory (connectors.partitioned_logs.open_log). Code that holds one never
asks which kind it is: it asks the value (its position type, how to name a partition, what the
log's retention is called).

It holds no secret, ever: Kinesis credentials come from the process environment
(tidemark.kinesis_access); Kafka client settings (TLS, SASL, OAuth) come from the environment
under the name of the Airflow connection this value carries (tidemark.kafka_access), never
inside it, because a Spark option is printed in plans, the UI and the event log.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

import msgspec

from tidemark.log_position import KAFKA_OFFSETS, KINESIS_SEQUENCE_NUMBERS, PositionType
from tidemark.shard_lineage import shard_id_of


class KafkaConnection(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="kind", tag="kafka"):
    """A Kafka topic: its brokers (host:port[,host:port...]) and its name. ``open_transaction_timeout_ms``:
    how long a partition's last stable offset may stand below its written end before the planner
    reports the partition as held by an open transaction. ``kafka_conn_id``: the connection whose
    settings secure the brokers (tidemark.kafka_access), by name; None: PLAINTEXT."""

    bootstrap_servers: str
    topic: str
    open_transaction_timeout_ms: Annotated[int, msgspec.Meta(ge=1)] = 900_000
    kafka_conn_id: str | None = None

    position_type: ClassVar[PositionType] = KAFKA_OFFSETS
    # Where an unread range went: what a person changes so that it does not happen again.
    retention_words: ClassVar[str] = "retention.ms/retention.bytes or a DeleteRecords call"
    # What a backfill's [start, end) is a window of, when it is not the records' log timestamps.
    window_by: ClassVar[str | None] = None

    def __post_init__(self):
        for required in ("bootstrap_servers", "topic"):
            if not getattr(self, required):
                raise ValueError(f"the Kafka connection needs '{required}'")

    def access(self, environ=None):
        """The brokers with the settings that secure them, read from ``environ`` (default
        ``os.environ``): tidemark.kafka_access.KafkaAccess."""
        from tidemark.kafka_access import KafkaAccess

        return KafkaAccess.of(self.bootstrap_servers, self.kafka_conn_id, environ)

    @property
    def log_name(self) -> str:
        return self.topic

    @property
    def log_words(self) -> str:
        """The log in a sentence: ``topic 'telemetry'``."""
        return f"topic {self.topic!r}"

    def partition_words(self, partition: int) -> str:
        return f"partition {partition}"

    def partition_fields(self, partition: int) -> dict[str, str]:
        """What a log line adds to name ``partition`` in the log's own terms: nothing, a Kafka
        partition's number is its name."""
        return {}

    def planner_settings(self) -> dict:
        """What tidemark.batch_planner.BatchPlanner needs to know of this log beyond the event-time rules."""
        return {"open_transaction_timeout_ms": self.open_transaction_timeout_ms}


class KinesisConnection(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="kind", tag="kinesis"):
    """A Kinesis data stream: its name, region and endpoint (None: the region's AWS endpoint).
    ``max_calls_per_second``: GetRecords per shard a reader allows itself (Kinesis allows 5,
    shared by every consumer). ``injected_throttling``: the fraction of GetRecords calls answered
    with a throttling error before Kinesis is asked (the chaos switch of the throttling tests; a
    loopback Kinesis never throttles); 0 in production."""

    stream: str
    region: str
    endpoint: str | None = None
    max_calls_per_second: Annotated[float, msgspec.Meta(gt=0.0, le=5.0)] = 5.0
    injected_throttling: Annotated[float, msgspec.Meta(ge=0.0, lt=1.0)] = 0.0

    position_type: ClassVar[PositionType] = KINESIS_SEQUENCE_NUMBERS
    retention_words: ClassVar[str] = "the stream's RetentionPeriodHours (IncreaseStreamRetentionPeriod raises it)"
    window_by: ClassVar[str | None] = (
        "arrival time: Kinesis's ApproximateArrivalTimestamp (AT_TIMESTAMP), not the records' event time"
    )

    def __post_init__(self):
        for required in ("stream", "region"):
            if not getattr(self, required):
                raise ValueError(f"the Kinesis connection needs '{required}'")

    def access(self, environ=None):
        """The stream with the keys to read it, from ``environ`` (default ``os.environ``):
        tidemark.kinesis_access.KinesisAccess (raises its KinesisAccessError, a ValueError)."""
        from tidemark.kinesis_access import KinesisAccess

        return KinesisAccess.from_source(self, environ)

    @property
    def log_name(self) -> str:
        return self.stream

    @property
    def log_words(self) -> str:
        return f"Kinesis stream {self.stream!r}"

    def partition_words(self, partition: int) -> str:
        return f"shard {shard_id_of(partition)} (partition {partition})"

    def partition_fields(self, partition: int) -> dict[str, str]:
        """What a log line adds to name ``partition`` in the log's own terms: the shard's id."""
        return {"shard_id": shard_id_of(partition)}

    def planner_settings(self) -> dict:
        return {}


LogConnection = KafkaConnection | KinesisConnection
