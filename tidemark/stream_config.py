"""Stream configuration: conf/streams.yaml as one typed contract, validated once at start-up.

Every consumer of configuration (the Spark jobs, the DAG files, the generator) goes through
``load_streams``; a bad value fails there, at start-up, with the full key path and the reason,
never later as a confusing runtime error. All durations are held in milliseconds.

The types below are the contract: msgspec Structs whose field types say what the file may hold
(tidemark.config_values for durations, memory and cron schedules) and whose ``__post_init__``
holds the rules that relate several fields. tidemark.config_document reads the YAML into them
(``${VAR}`` / ``${VAR:-default}`` environment references, key paths in every message), the
file's ``defaults:`` section laid under every stream first (tidemark.config_defaults).
A field whose name in the file differs from its attribute (durations: ``idle_timeout`` in the
file, ``idle_timeout_ms`` here) says so with ``msgspec.field(name=...)``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, ClassVar, Literal, get_args

import msgspec

from tidemark.alert_settings import AlertSettings
from tidemark.batch_memory import BatchMemoryError, check_batch_fits
from tidemark.config_document import StreamConfigError, read_config, with_environment
from tidemark.config_values import (
    AwsRegion,
    ConfigRuleError,
    CronExpression,
    EndpointUrl,
    KinesisStreamName,
    MemoryMiB,
    Milliseconds,
    PositiveMilliseconds,
    written_as,
)
from tidemark.duration import format_duration_ms
from tidemark.log_connection import KafkaConnection, KinesisConnection
from tidemark.log_position import KAFKA_OFFSETS, KINESIS_SEQUENCE_NUMBERS, PositionType
from tidemark.maintenance_settings import MaintenanceSettings
from tidemark.partition_limit import DEFAULT_MAX_PARTITIONS, suggested_partition_limit
from tidemark.stall_rules import StallRules
from tidemark.stream_families import declared_streams, members_of, template_name, topic_pattern
from tidemark.topic_listing import TopicListing, TopicListingError, read_listing

FieldType = Literal["string", "double", "long", "int", "boolean"]
EventTimeFormat = Literal["iso8601", "epoch_millis"]
PayloadFormat = Literal["json", "avro", "protobuf"]
KeyFormat = Literal["none", "json", "avro", "protobuf"]
ColumnsFrom = Literal["declared", "follow_registry"]
StartingOffsets = Literal["earliest", "latest"]
StartingPosition = Literal["trim_horizon", "latest"]
PersistMode = Literal["available_now", "continuous"]
FIELD_TYPES: tuple[str, ...] = get_args(FieldType)
# The formats whose writer schema a registry holds.
REGISTRY_FORMATS = ("avro", "protobuf")
EVENT_TIME_FORMATS: tuple[str, ...] = get_args(EventTimeFormat)
STARTING_OFFSETS: tuple[str, ...] = get_args(StartingOffsets)
STARTING_POSITIONS: tuple[str, ...] = get_args(StartingPosition)
PERSIST_MODES: tuple[str, ...] = get_args(PersistMode)

# Columns tidemark adds to every events row; a payload field may not reuse these names.
RESERVED_COLUMNS = frozenset(
    {
        "source_partition",
        "source_offset",
        "log_timestamp",
        "event_time",
        "event_date",
        "event_hour",
        "record_key",
        "record_headers",
        "step_id",
        # The name step_id had before issue 26: a lake written then still holds it underneath.
        "batch_id",
    }
)

_STREAM_NAME = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# A slice shorter than this makes a micro-batch per few records: a typo, not a choice.
_MIN_SLICE_MS = 60_000
# Keys that would hold AWS credentials: refused in a source, saying where credentials come from.
_CREDENTIAL_KEY = re.compile(r"access_key|secret|session_token|password|credential", re.IGNORECASE)
# Keys that would hold a Kafka client's security settings or secrets: they belong in a connection.
_KAFKA_SECURITY_KEY = re.compile(
    r"secret|password|credential|token|jaas|sasl|ssl|security|keystore|truststore|certificate|oauth", re.IGNORECASE
)

Text = Annotated[str, msgspec.Meta(min_length=1)]
WholeNumber = Annotated[int, msgspec.Meta(ge=0)]
PositiveNumber = Annotated[int, msgspec.Meta(ge=1)]


class _Section(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A mapping of the file: frozen, and a key it does not declare is an error."""


class PayloadField(_Section):
    """One typed field of the record's JSON value; in the file, the key of ``payload.fields`` names it."""

    name: str
    # The column's type; a value of another JSON type sends the record to quarantine.
    type: FieldType
    # A record without the field (or with null) goes to quarantine; False: the column is null.
    required: bool = True
    # Where the value is in the record, when not at its top level under the field's name: names
    # joined by dots into nested objects, records or messages (place.site). The column keeps the
    # field's name.
    path: str | None = None

    def __post_init__(self):
        if not _IDENTIFIER.match(self.name):
            raise ConfigRuleError("", "a field name must be a letter or '_' followed by letters, digits or '_'")
        if self.path is not None and not all(part.strip() == part and part for part in self.path.split(".")):
            raise ConfigRuleError(
                "path", f"{self.path!r} is not names joined by dots (place.site): no empty name, no spaces around one"
            )
        if self.name in RESERVED_COLUMNS:
            raise ConfigRuleError("", f"{self.name!r} is a column tidemark adds itself; rename the field")


class PayloadSchema(_Section):
    """How a record's value is decoded: a JSON object, or an Avro record framed by a schema
    registry, with an event-time field and typed fields."""

    # The field that holds the record's event time (an Avro timestamp-millis/micros field is
    # taken as the instant it is, whatever event_time_format says).
    event_time_field: Text
    # How that field writes it: ISO-8601 text with an offset, or epoch milliseconds.
    event_time_format: EventTimeFormat = "iso8601"
    # Required (at least one); the default only keeps the positional order of the fields.
    fields: tuple[PayloadField, ...] = ()
    # A record value larger than this (bytes) is quarantined, not decoded.
    max_record_bytes: PositiveNumber = 1_048_576
    # json: a JSON object per value. avro: Avro binary in the schema registry's wire format
    # (magic byte 0, the writer schema's 4-byte id), its schema read from registry_url.
    # protobuf: a Protobuf message in that wire format (the message indexes after the id), its
    # schema's .proto text (or serialized descriptor) read from registry_url and compiled at run time.
    format: PayloadFormat = "json"
    # The schema registry's Confluent-compatible API (avro and protobuf only), e.g. http://registry:8081 or
    # Apicurio's http://host:8080/apis/ccompat/v7. No credentials in it.
    registry_url: str | None = None
    # The Airflow connection (type http: login and password) of a registry that asks for a login;
    # its credentials reach each process from the environment (tidemark.registry_access).
    registry_conn_id: str | None = None
    # How long a worker waits for a registry that does not answer (or answers 5xx) before its
    # batch fails; it is retried, and no record is quarantined for it.
    registry_patience_ms: PositiveMilliseconds = msgspec.field(default=60_000, name="registry_patience")
    # How the record key is decoded into key_fields: none keeps it as bytes in record_key only;
    # json, avro or protobuf decode it as a value of that format is (avro and protobuf through
    # registry_url, the schema id in the key's prefix or its __key_schema_id header).
    key_format: KeyFormat = "none"
    # Typed fields of the decoded key, declared as fields are; each becomes a column after them.
    key_fields: tuple[PayloadField, ...] = ()
    # declared: the columns are the declared fields. follow_registry (avro): every field of every
    # version registered under registry_subject becomes a nullable column too, under the rules of
    # tidemark.schema_evolution (a new field: a new column; a widened one: refused at start-up if
    # its column exists; an incompatible change: the stream stops at start-up naming the field).
    columns_from: ColumnsFrom = "declared"
    # The subject whose versions the columns follow; default: <topic>-value.
    registry_subject: str | None = None

    @property
    def columns(self) -> tuple[PayloadField, ...]:
        """Every column the payload fills: the value's fields, then the key's."""
        return self.fields + self.key_fields

    @property
    def reads_registry(self) -> bool:
        return self.format in REGISTRY_FORMATS or self.key_format in REGISTRY_FORMATS

    def __post_init__(self):
        for key, kind in (("format", self.format), ("key_format", self.key_format)):
            if kind in REGISTRY_FORMATS and not self.registry_url:
                raise ConfigRuleError(
                    "registry_url", f"{key} {kind} reads each record's writer schema from a registry: name its URL"
                )
        if not self.reads_registry and (self.registry_url or self.registry_conn_id):
            key = "registry_url" if self.registry_url else "registry_conn_id"
            raise ConfigRuleError(
                key, "only formats avro and protobuf read a registry; remove it or set format: avro or protobuf"
            )
        if self.columns_from == "follow_registry" and self.format != "avro":
            raise ConfigRuleError(
                "columns_from", f"follow_registry follows Avro schemas; format {self.format} declares its columns"
            )
        if self.registry_subject is not None and self.columns_from != "follow_registry":
            raise ConfigRuleError("registry_subject", "only columns_from: follow_registry reads a subject")
        if self.key_format == "none" and self.key_fields:
            raise ConfigRuleError("key_fields", "the key is not decoded: set key_format (json, avro or protobuf)")
        if self.key_format != "none" and not self.key_fields:
            raise ConfigRuleError("key_fields", f"key_format {self.key_format} decodes the key: declare its fields")
        value_names = {field.name for field in self.fields} | {self.event_time_field}
        for field in self.key_fields:
            if field.name in value_names:
                raise ConfigRuleError(
                    f"key_fields.{field.name}", "a column of that name comes from the value already: rename one"
                )
        if self.registry_url:
            from urllib.parse import urlsplit

            url = urlsplit(self.registry_url)
            if url.scheme not in ("http", "https") or not url.hostname:
                raise ConfigRuleError("registry_url", f"{self.registry_url!r} is not an http(s) URL")
            if url.username or url.password:
                raise ConfigRuleError(
                    "registry_url",
                    "credentials do not belong in the stream configuration (it is copied around); remove them from the URL",
                )
        if not self.fields:
            raise ConfigRuleError("fields", "declare at least one payload field")
        for field in self.fields:
            if field.name == self.event_time_field:
                raise ConfigRuleError(
                    f"fields.{field.name}",
                    "the event-time field is declared by event_time_field, not as a payload field",
                )


class EventTimeTolerances(_Section):
    """The stream's event-time tolerances, all in milliseconds (see DESIGN.md, event-time rules)."""

    # A partition's watermark is the largest valid event time it admitted minus this (and 1 ms).
    max_out_of_orderness_ms: Milliseconds = msgspec.field(name="max_out_of_orderness")
    # A record whose event time is below the global watermark G minus this goes to the late
    # table; an hour is sealed once G passes its end plus this. Shorter than the retention.
    allowed_lateness_ms: Milliseconds = msgspec.field(name="allowed_lateness")
    # A caught-up partition whose last record is older than this is IDLE and does not hold the
    # global watermark back.
    idle_timeout_ms: PositiveMilliseconds = msgspec.field(name="idle_timeout")
    # Aligned reading: a batch admits only records with log time before G + this; larger than
    # max_out_of_orderness (slices advance by the difference).
    max_drift_ms: PositiveMilliseconds = msgspec.field(name="max_drift")
    # A record whose event time is more than this ahead of the time it was read is quarantined.
    max_future_skew_ms: Milliseconds = msgspec.field(name="max_future_skew")

    def __post_init__(self):
        if self.max_drift_ms <= self.max_out_of_orderness_ms:
            raise ConfigRuleError(
                "max_drift",
                f"{format_duration_ms(self.max_drift_ms)} must be larger than max_out_of_orderness "
                f"{format_duration_ms(self.max_out_of_orderness_ms)}: aligned reading advances by the difference",
            )


class KafkaSource(_Section, tag_field="kind", tag="kafka"):
    """A Kafka topic (``kind: kafka``); KinesisSource is the other kind of source."""

    kind: ClassVar[str] = "kafka"

    # The brokers, host:port[,host:port...].
    bootstrap_servers: Text
    # The topic the stream is read from.
    topic: Text
    # How many partitions the topic has (the topic is created with them; the job reads them all).
    partitions: PositiveNumber
    # Where a partition with no checkpoint starts: its earliest retained offset, or the end.
    starting_offsets: StartingOffsets = "earliest"
    # True when the producer sets the record timestamp to the event time (CreateTime = event
    # time); only then can the log's time index plan event-time slices.
    log_timestamp_is_event_time: bool = True
    # How long a partition's last stable offset may stand still below its written end (an open
    # transaction) before the job reports the partition as held by it (ms). Kafka aborts a
    # transaction after the producer's transaction.timeout.ms, at most 15 minutes by default.
    open_transaction_timeout_ms: PositiveMilliseconds = msgspec.field(
        default=15 * 60_000, name="open_transaction_timeout"
    )
    # The most partitions the topic may have (tidemark.partition_limit): past it a job fails
    # at start-up instead of planning and ledgering every partition of a topic grown by mistake.
    max_partitions: PositiveNumber = DEFAULT_MAX_PARTITIONS
    # The most Spark tasks a batch reads the log with (tidemark.read_tasks); None: the cluster's
    # parallelism (Spark's defaultParallelism), like the input splits of Spark's own sources.
    read_tasks: WholeNumber | None = None
    # The Airflow connection (type kafka) whose extra holds the librdkafka settings that secure
    # the brokers (TLS, SASL, OAuth; tidemark.kafka_access); None: PLAINTEXT.
    kafka_conn_id: Text | None = None

    @classmethod
    def refused_key(cls, key: str) -> str | None:
        """Why ``key`` may not be written here, for a key that would hold a security setting or a
        secret; else None."""
        if not _KAFKA_SECURITY_KEY.search(str(key)):
            return None
        return (
            "security settings and credentials never go in the stream configuration (every process reads it and it "
            "is copied around); name an Airflow connection of type kafka with kafka_conn_id, whose extra holds the "
            "librdkafka settings (security.protocol, sasl.*, ssl.*); remove this key"
        )

    # How positions are stored and named (offsets, BIGINT).
    position_type: ClassVar[PositionType] = KAFKA_OFFSETS
    # The Airflow AWS connection the log's credentials come from: none, a topic is not in AWS.
    aws_conn_id: ClassVar[None] = None
    # The embedded stack's service (stack.services) that stands in for the log: the local broker.
    local_service: ClassVar[str] = "kafka"
    # False: a record's log time is what its producer set (CreateTime), so a backlog written now
    # can carry past times, and a window of log times finds it there.
    stamps_arrival_time: ClassVar[bool] = False

    def connection(self) -> KafkaConnection:
        """Where the topic is, as the one typed value that reaches every client of it."""
        return KafkaConnection(
            self.bootstrap_servers, self.topic, self.open_transaction_timeout_ms, kafka_conn_id=self.kafka_conn_id
        )

    @property
    def starting(self) -> str:
        """Where a partition with no checkpoint starts: earliest or latest."""
        return self.starting_offsets

    def unsupported_setting(self) -> None:
        """None: every setting of a Kafka source is supported."""
        return None

    @property
    def log_name(self) -> str:
        """The log's name: the topic."""
        return self.topic

    @property
    def description(self) -> str:
        """The log in a sentence's words, for DAG docs and messages."""
        return f"Kafka topic `{self.topic}` ({self.partitions} partitions) at {self.bootstrap_servers}"

    @property
    def address(self) -> str:
        """Where a client reaches the log, for a message saying it did not answer: the brokers."""
        return self.bootstrap_servers

    @property
    def created_partitions(self) -> int:
        """How many partitions the topic is created with (the demo) and has."""
        return self.partitions

    @property
    def partition_hint(self) -> str:
        """Which partitions there are, for a form's help text."""
        return f"0 … {self.partitions - 1}"

    @property
    def fixed_partitions(self) -> tuple[int, ...]:
        """The partitions a request may name, known without asking the log: 0 … partitions − 1."""
        return tuple(range(self.partitions))

    def __post_init__(self):
        if self.partitions > self.max_partitions:
            raise ConfigRuleError(
                "max_partitions",
                f"{self.max_partitions} is below the topic's {self.partitions} partitions (source.partitions); "
                f"suggested: {suggested_partition_limit(self.partitions)}",
            )
        _check_read_tasks(self.read_tasks, self.max_partitions, "partitions")


class KinesisSource(_Section, tag_field="kind", tag="kinesis"):
    """A Kinesis data stream (``kind: kinesis``): its shards are the stream's partitions.

    Credentials are never part of it: they come from the Airflow AWS connection ``aws_conn_id``
    names (tidemark_airflow.aws_connection), or without one from boto3's default chain (the
    environment's AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, ~/.aws, an
    instance or task role). A key that would hold one fails loading, saying so.
    """

    kind: ClassVar[str] = "kinesis"

    # The Kinesis data stream's name.
    stream: KinesisStreamName
    # The AWS region the stream is in.
    region: AwsRegion
    # How many shards the stream is created with (`tidemark create-kinesis-stream`, the demo) and
    # the generator writes to. The job reads the shards the stream has (ListShards), so a split or
    # a merge needs no change here.
    shards: PositiveNumber
    # None: the region's AWS endpoint; else e.g. the loopback Kinesis, http://127.0.0.1:19450.
    endpoint: EndpointUrl | None = None
    # The Airflow AWS connection the credentials come from; None: boto3's default chain.
    aws_conn_id: Text | None = None
    # Where a shard with no checkpoint starts: its oldest retained record, or what arrives next.
    starting_position: StartingPosition = "trim_horizon"
    # Kinesis stamps each record with its arrival (ApproximateArrivalTimestamp), not with its event
    # time: only producers that write within moments of the event time make AT_TIMESTAMP an
    # event-time index the job can plan slices from. A backlog written later is not one.
    log_timestamp_is_event_time: bool = False
    # The most shards the stream may have, open and closed ones the job still tracks
    # (tidemark.partition_limit): the seeds' largest stream had 1,800.
    max_partitions: PositiveNumber = msgspec.field(default=DEFAULT_MAX_PARTITIONS, name="max_shards")
    # The most Spark tasks a batch reads the shards with (tidemark.read_tasks); None: the cluster's
    # parallelism.
    read_tasks: WholeNumber | None = None

    @classmethod
    def refused_key(cls, key: str) -> str | None:
        """Why ``key`` may not be written here, for a key that would hold a credential; else None."""
        if not _CREDENTIAL_KEY.search(str(key)):
            return None
        return (
            "credentials never go in the stream configuration (every process reads it and it is copied around); "
            "name an Airflow AWS connection with aws_conn_id, or leave it unset to use boto3's default chain "
            "(AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment, ~/.aws, an instance role); remove this key"
        )

    # How positions are stored and named (sequence numbers, fixed-width text keys).
    position_type: ClassVar[PositionType] = KINESIS_SEQUENCE_NUMBERS
    # The Airflow Kafka connection: none, a Kinesis stream is not on Kafka.
    kafka_conn_id: ClassVar[None] = None
    # The embedded stack's service (stack.services) that stands in for the log: the loopback Kinesis.
    local_service: ClassVar[str] = "kinesis"
    # True: Kinesis stamps each record with its arrival (ApproximateArrivalTimestamp), whatever its
    # producer says, so a window of log times (AT_TIMESTAMP) finds a backlog when it was written.
    stamps_arrival_time: ClassVar[bool] = True

    def connection(self) -> KinesisConnection:
        """Where the stream is, as the one typed value that reaches every client of it."""
        return KinesisConnection(self.stream, self.region, self.endpoint)

    @property
    def starting(self) -> str:
        """Where a shard with no checkpoint starts, in every log's words: earliest (TRIM_HORIZON) or latest."""
        return "earliest" if self.starting_position == "trim_horizon" else "latest"

    def unsupported_setting(self) -> str | None:
        """A setting the job cannot honour yet, named with why; None when there is none."""
        if self.starting_position == "latest":
            return (
                "starting_position: 'latest' is not supported for Kinesis yet (a shard has no position before "
                "its first record); use trim_horizon (the shards' oldest retained records)"
            )
        return None

    @property
    def log_name(self) -> str:
        """The log's name: the Kinesis stream."""
        return self.stream

    @property
    def description(self) -> str:
        """The log in a sentence's words, for DAG docs and messages."""
        where = self.endpoint or f"AWS {self.region}"
        return f"Kinesis stream `{self.stream}` (created with {self.shards} shards; read as listed) at {where}"

    @property
    def address(self) -> str:
        """Where a client reaches the log, for a message saying it did not answer: the stream and
        its endpoint (or its AWS region)."""
        return f"Kinesis stream {self.stream!r} at {self.endpoint or 'AWS ' + self.region}"

    @property
    def created_partitions(self) -> int:
        """How many shards the stream is created with (the demo, `tidemark create-kinesis-stream`);
        resharding changes what it has."""
        return self.shards

    @property
    def partition_hint(self) -> str:
        """Which partitions there are, for a form's help text: shards are numbered by their ids."""
        return "a shard's number (shardId-000000000007 is 7)"

    @property
    def fixed_partitions(self) -> None:
        """None: shards are numbered by their ids and change with resharding, so which exist is
        asked of the stream's listing, by the job, before any work (never at parse time)."""
        return None

    def __post_init__(self):
        if self.shards > self.max_partitions:
            raise ConfigRuleError(
                "max_shards",
                f"{self.max_partitions} is below the stream's {self.shards} shards (source.shards); "
                f"suggested: {suggested_partition_limit(self.shards)}",
            )
        _check_read_tasks(self.read_tasks, self.max_partitions, "shards")


def _check_read_tasks(read_tasks: int | None, max_partitions: int, unit: str) -> None:
    """source.read_tasks must read something and can use at most one task per partition (shard)."""
    if read_tasks == 0:
        raise ConfigRuleError(
            "read_tasks",
            "0 read tasks cannot read anything; suggested: leave it unset (the cluster's parallelism) or 1 and up",
        )
    if read_tasks is not None and read_tasks > max_partitions:
        raise ConfigRuleError(
            "read_tasks",
            f"{read_tasks} read tasks cannot all be used with at most {max_partitions} {unit} "
            f"(a task reads one {unit[:-1]} at least); suggested: leave it unset (the cluster's parallelism) "
            f"or at most {max_partitions}",
        )


# The kinds of log a stream may be read from; ``source.kind`` in the file says which.
Source = KafkaSource | KinesisSource


class LakeLocation(_Section):
    """Where a stream's tables and checkpoints live: <root>/<stream>/<table>."""

    # The folder or s3a:// URL the stream's Delta tables live under.
    root: Text
    # The folder or s3a:// URL the jobs' Spark checkpoints live under.
    checkpoint_root: Text


class PersistSettings(_Section):
    """How the persist DAG runs the persist job (spark_jobs/persist/job.py)."""

    # available_now: each scheduled run reads what is there and stops; continuous: one
    # long-running job that starts a micro-batch every trigger_interval.
    mode: PersistMode = "available_now"
    # Cron of the persist DAG's runs (available_now).
    schedule: CronExpression = "*/5 * * * *"
    # How often the continuous job starts a micro-batch.
    trigger_interval_ms: PositiveMilliseconds = msgspec.field(default=30_000, name="trigger_interval")
    # The row budget of one micro-batch, over all partitions.
    max_records_per_batch: PositiveNumber = 200_000
    # available_now: the most batches one run persists (a first run's batch that registers the
    # partitions aside), then it ends and the next scheduled run goes on from there. None:
    # everything the log holds when the run starts.
    # A family's turn: a member with a large backlog leaves its driver to the next member after
    # this many batches, so no member waits for another's whole catch-up.
    max_batches_per_run: PositiveNumber | None = None
    # The Airflow Spark connection spark-submit runs the jobs with.
    spark_conn_id: Text = "spark_default"
    # The driver heap of the jobs that read the stream in batches (MiB); None: sized to the row
    # budget (tidemark.batch_memory).
    driver_memory_mib: MemoryMiB | None = msgspec.field(default=None, name="driver_memory")
    # How often a running live driver says it is alive (spark_jobs.persist.driver_beat): a recovery
    # or backfill that meets live's batch in flight waits for it while the beat moves and yields
    # once it has not moved for three of these (tidemark.live_batch_wait).
    driver_beat_interval_ms: PositiveMilliseconds = msgspec.field(default=5_000, name="driver_beat_interval")


class QualitySettings(_Section):
    """The stream's scheduled quality checks (see DESIGN.md, Checks); durations in ms.

    The defaults here are also the defaults of the optional ``quality:`` section.
    """

    schedule: CronExpression = "*/10 * * * *"  # cron of the scheduled quality run
    stall_window: Annotated[int, msgspec.Meta(ge=2)] = 6  # K: ledger rows per partition the stall rules look at
    # STOP: a partition's read position stood this long while its log end moved (or no ledger
    # row for this long with unread data).
    stall_timeout_ms: PositiveMilliseconds = msgspec.field(default=30 * 60_000, name="stall_timeout")
    # LAGGING: a partition whose watermark W_p falls behind the global watermark G by more than this.
    max_partition_lag_ms: PositiveMilliseconds = msgspec.field(default=60 * 60_000, name="max_partition_lag")
    # Longest allowed gap between consecutive event times of one partition within an hour.
    event_time_gap_ms: PositiveMilliseconds = msgspec.field(default=30 * 60_000, name="event_time_gap")
    # Late records one partition may have in one hour before the check fails.
    max_late_per_hour: WholeNumber = 1000
    # Quarantined records one partition may have in one hour before the check fails.
    max_quarantined_per_hour: WholeNumber = 100
    # How many earlier hours define "a partition normally produces in this hour".
    history_hours: PositiveNumber = 24
    # Cron of the sweep (dags/tidemark_sweep.py): completeness of every sealed hour the source log
    # still retains, the net under the Delta-log reading of each scheduled run.
    sweep_schedule: CronExpression = "40 */6 * * *"
    # GX validation results and their Data Docs pages older than this are deleted by each quality
    # run (building Data Docs lists every result kept); each run's summary and the hour reports
    # keep the history.
    data_docs_keep_ms: PositiveMilliseconds = msgspec.field(default=24 * 3_600_000, name="data_docs_keep")

    def stall_rules(self) -> StallRules:
        return StallRules(self.stall_window, self.stall_timeout_ms, self.max_partition_lag_ms)


class BackfillSettings(_Section):
    """The stream's daily reconciliation (dags/tidemark_backfill.py): at ``reconcile_schedule``
    (cron, UTC) the previous day is backfilled into a shadow set and compared with live. The
    default is also that of the optional ``backfill:`` section."""

    # Cron of the daily reconciliation.
    reconcile_schedule: CronExpression = "30 2 * * *"


class OfflineDevicesSettings(_Section):
    """The stream's offline-device detector (spark_jobs/offline_devices/job.py); durations in ms.

    A device (``device_field``, a payload field) is offline once ``offline_after`` has passed
    since its last record. The detector reads sealed event time in slices: ``live_slice`` long in
    live runs, ``backfill_slice`` long in backfills. Slice length changes how much one micro-batch
    holds, never the result. The defaults here are also those of the ``offline_devices:`` section.
    """

    # The payload field (string, long or int) that names a device.
    device_field: Text = "device_id"
    # A device with no record for this long is offline.
    offline_after_ms: PositiveMilliseconds = msgspec.field(default=30 * 60_000, name="offline_after")
    # The event time one live micro-batch reads (at least 1m).
    live_slice_ms: Milliseconds = msgspec.field(default=15 * 60_000, name="live_slice")
    # The event time one backfill micro-batch reads (at least 1m).
    backfill_slice_ms: Milliseconds = msgspec.field(default=6 * 3_600_000, name="backfill_slice")

    def __post_init__(self):
        for key, ms in (("live_slice", self.live_slice_ms), ("backfill_slice", self.backfill_slice_ms)):
            if ms < _MIN_SLICE_MS:
                raise ConfigRuleError(
                    key, f"{format_duration_ms(ms)} is shorter than {format_duration_ms(_MIN_SLICE_MS)}"
                )


class StreamConfig(_Section):
    """One stream; in the file, the key under ``streams:`` names it."""

    name: str
    # The log the stream is read from; ``kind`` says which.
    source: Source
    # How each record's value is decoded.
    payload: PayloadSchema
    # The event-time tolerances.
    event_time: EventTimeTolerances
    # Where the stream's tables and checkpoints live.
    lake: LakeLocation
    # How long the log keeps records; allowed_lateness must be shorter.
    retention_ms: PositiveMilliseconds = msgspec.field(name="retention")
    # How the persist job runs.
    persist: PersistSettings
    # The scheduled quality checks and the sweep.
    quality: QualitySettings = msgspec.field(default_factory=QualitySettings)
    # The daily reconciliation.
    backfill: BackfillSettings = msgspec.field(default_factory=BackfillSettings)
    # None: the stream has no offline-device detector (no ``offline_devices:`` section).
    offline_devices: OfflineDevicesSettings | None = None
    # Compaction of sealed hours and VACUUM; see tidemark.maintenance_settings.
    maintenance: MaintenanceSettings = msgspec.field(default_factory=MaintenanceSettings)
    # None: nobody is told (no ``alerts:`` section); see tidemark.alert_settings.
    alerts: AlertSettings | None = None
    # The family the stream is a member of (tidemark.stream_families), set when the family is
    # read; never written in the file.
    family: str | None = None

    def __post_init__(self):
        if not _STREAM_NAME.match(self.name):
            raise ConfigRuleError(
                "", "a stream name must be lower-case letters, digits and '_', starting with a letter"
            )
        if self.event_time.allowed_lateness_ms >= self.retention_ms:
            raise ConfigRuleError(
                "event_time.allowed_lateness",
                f"{format_duration_ms(self.event_time.allowed_lateness_ms)} is not shorter than the log retention "
                f"{format_duration_ms(self.retention_ms)}: records could leave the log before their hour is sealed",
            )
        if self.persist.driver_memory_mib is not None:
            try:
                check_batch_fits(
                    self.persist.max_records_per_batch,
                    self.payload,
                    self.persist.driver_memory_mib,
                    "persist.driver_memory",
                )
            except BatchMemoryError as error:
                raise ConfigRuleError(error.key, error.reason) from None
        if self.offline_devices is not None:
            device_field = self.offline_devices.device_field
            declared = {f.name: f for f in self.payload.fields}
            if device_field not in declared:
                raise ConfigRuleError(
                    "offline_devices.device_field",
                    f"{device_field!r} is not a payload field; declared: {', '.join(declared)}",
                )
            if declared[device_field].type not in ("string", "long", "int"):
                raise ConfigRuleError(
                    "offline_devices.device_field",
                    f"{device_field!r} is a {declared[device_field].type}; a device id is a string, long or int",
                )

    def partition_refusal(self, partition: int) -> str | None:
        """Why ``partition`` cannot be one of the stream's partitions, as "partition N is …";
        None when it can be. A log with fixed partitions (a Kafka topic: 0 … partitions − 1) is
        checked here; a Kinesis shard number only has to be a number, because which shards exist
        is asked of the stream's listing, by the job, before any work (no network at parse time)."""
        fixed = self.source.fixed_partitions
        if fixed is not None and partition not in fixed:
            return (
                f"partition {partition} is outside [0, {len(fixed)}): stream {self.name!r} has {len(fixed)} partitions"
            )
        if partition < 0:
            return f"partition {partition} is not {self.source.partition_hint}"
        return None

    def table_path(self, table: str) -> str:
        """Location of one of the stream's Delta tables (events, ledger, quarantine, late, seals)."""
        return f"{self.lake.root.rstrip('/')}/{self.name}/{table}"

    def checkpoint_path(self, job: str) -> str:
        """Location of one job's Spark checkpoint for this stream."""
        return f"{self.lake.checkpoint_root.rstrip('/')}/{self.name}/{job}"


TopicPattern = Annotated[str, msgspec.Meta(min_length=1, extra=written_as(topic_pattern))]


class StreamFamily(_Section):
    """A family's own keys (tidemark.stream_families); its other keys are its members'."""

    name: str
    # A topic is a member when its whole name matches this regular expression ...
    match: TopicPattern
    # ... and none of these.
    exclude: tuple[TopicPattern, ...] = ()
    # When the cluster's topics are listed again (DAG ``tidemark_topics__<name>``, or
    # ``tidemark refresh-topics``): a new topic is persisted from the next refresh on, from its
    # ``source.starting_offsets``.
    refresh: CronExpression = "*/5 * * * *"
    # The most drivers (spark-submits, one JVM each) a tick of the family starts at once: the
    # members with work are dealt into this many groups, each persisted one after another in one
    # driver (maintenance too; the daily reconciliation runs this many backfills at a time). At
    # most the cores Spark's jobs may use: past that, a driver's Python workers can miss Spark's
    # fixed 10-second window to connect back, and those members fail their turn.
    max_drivers: PositiveNumber = 4


class StreamsFile(_Section):
    """The whole file: every stream tidemark persists."""

    # The streams, by name. At least one stream or family.
    streams: tuple[StreamConfig, ...] = ()
    # Streams of one shape, one per matching topic (tidemark.stream_families), by name.
    families: tuple[StreamFamily, ...] = ()
    # The folder of the families' topic listings (tidemark.topic_listing), one file per family:
    # a path every DAG parse can read and the refresh can write. Relative: to this file's folder.
    listings: Text = "listings"

    def __post_init__(self):
        if not self.streams:
            raise ConfigRuleError("streams", "at least one stream or family is required")


@dataclass(frozen=True)
class DeclaredFamily:
    """A family as read: its own keys, its template (the family's keys over ``defaults``, with a
    placeholder topic: its brokers, its connection), the stream names of its members, and where
    its listing is kept."""

    rule: StreamFamily
    template: StreamConfig
    members: tuple[str, ...]
    listing_path: Path


@dataclass(frozen=True)
class DeclaredStreams:
    """Every stream of a streams file by name (declared ones and families' members), and the
    families by name."""

    streams: dict[str, StreamConfig]
    families: dict[str, DeclaredFamily]

    def outside_families(self) -> list[StreamConfig]:
        """The streams no family has as a member: those whose DAGs are their own."""
        members = {member for family in self.families.values() for member in family.members}
        return [stream for name, stream in self.streams.items() if name not in members]

    def families_with_members(self) -> list[DeclaredFamily]:
        """The families with at least one member listed: those with DAGs for their members."""
        return [family for family in self.families.values() if family.members]


def read_streams_file(path: str | Path, environ: Mapping[str, str] | None = None) -> DeclaredStreams:
    """Read and validate a streams file, families expanded from their cached listings.

    Raises StreamConfigError naming the file, the key path and what is wrong."""
    path = Path(path)
    environ = os.environ if environ is None else environ
    folder = path.parent / "listings"
    listings: dict[str, TopicListing | None] = {}

    def listing_of(family: str) -> TopicListing | None:
        if family not in listings:
            listings[family] = _listing(folder, family)
        return listings[family]

    def declared(document):
        nonlocal folder
        folder = _listings_folder(path, document, environ)
        return declared_streams(document, listing_of)

    whole = read_config(path, StreamsFile, environ, declared)
    templates = {template_name(family.name) for family in whole.families}
    streams = {stream.name: stream for stream in whole.streams if stream.name not in templates}
    by_name = {stream.name: stream for stream in whole.streams}
    families = {}
    for family in whole.families:
        members = tuple(topic.stream for topic in members_of(listings.get(family.name), family.match, family.exclude))
        families[family.name] = DeclaredFamily(
            family, by_name[template_name(family.name)], members, _listing_path(folder, family.name)
        )
    return DeclaredStreams(streams, families)


def load_streams(path: str | Path, environ: Mapping[str, str] | None = None) -> dict[str, StreamConfig]:
    """Read and validate every stream of a streams.yaml file, by name: the declared streams and
    every family's members.

    Raises StreamConfigError naming the file, the key path and what is wrong.
    """
    return read_streams_file(path, environ).streams


def _listings_folder(path: Path, document, environ: Mapping[str, str]) -> Path:
    raw = document.get("listings") if isinstance(document, dict) else None
    if raw is None:
        return path.parent / "listings"
    try:
        folder = Path(with_environment(str(raw), environ).strip())
    except ConfigRuleError as error:
        raise ConfigRuleError("listings", error.reason) from None
    return folder if folder.is_absolute() else path.parent / folder


def _listing_path(folder: Path, family: str) -> Path:
    return folder / f"{family}.json"


def _listing(folder: Path, family: str) -> TopicListing | None:
    try:
        return read_listing(_listing_path(folder, family))
    except TopicListingError as error:
        raise ConfigRuleError(f"families.{family}", str(error)) from None


def load_stream(path: str | Path, name: str, environ: Mapping[str, str] | None = None) -> StreamConfig:
    """Read one stream by name; an unknown name fails with the names that exist."""
    streams = load_streams(path, environ)
    if name not in streams:
        raise StreamConfigError(f"{path}: no stream named {name!r}; configured streams: {', '.join(sorted(streams))}")
    return streams[name]
