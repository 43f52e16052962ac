"""Where the generator writes a stream's records: the one place that picks a Kafka topic or a
Kinesis stream, from the type of the stream's source (as connectors.partitioned_logs.open_log
does for reading). A new kind of log is a new opener and a line in each table below.

Both destinations take the same records through ``send(partition, key, value, timestamp_ms)``,
``wait`` and ``close``; the command line's overrides (--bootstrap, --topic, --kinesis-stream,
--kinesis-endpoint, --transaction-size) belong to one kind each, and a flag of the other kind is
refused before anything is written.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec

from generator.kafka_target import KafkaTarget, KafkaTargetError
from generator.kinesis_sink import KinesisSink, KinesisSinkError
from tidemark.kafka_access import KafkaAccessError
from tidemark.kinesis_access import KinesisAccess, KinesisAccessError
from tidemark.stream_config import KafkaSource, KinesisSource, StreamConfig

# A destination that could not take the records (exit 1).
DESTINATION_ERRORS = (KafkaTargetError, KinesisSinkError)


@dataclass
class Destination:
    """An opened destination: ``target`` takes the records, ``fields`` say where in the run's
    summary, ``described`` names it in the start line, and ``after`` adds what only the run
    could count (Kinesis: records PutRecords refused and retried)."""

    target: KafkaTarget | KinesisSink
    fields: dict
    described: str
    after: Callable[[], dict] = field(default=lambda: {})

    def summary_fields(self) -> dict:
        return {**self.fields, **self.after()}


def _kafka(args: argparse.Namespace, source: KafkaSource, partitions_needed: int) -> Destination:
    """The settings that secure the brokers: the stream's Kafka connection's, from this process's
    environment (tidemark.kafka_access); --bootstrap names other brokers, reached in PLAINTEXT."""
    bootstrap = args.bootstrap or source.bootstrap_servers
    topic = args.topic or source.topic
    from connectors.kafka_clients import client_settings

    try:
        settings = {} if args.bootstrap else client_settings(source.connection().access(), {})
    except KafkaAccessError as error:
        raise KafkaTargetError(str(error)) from None
    security = {key: value for key, value in settings.items() if key != "bootstrap.servers"}
    target = KafkaTarget(
        bootstrap, topic, partitions_needed=partitions_needed, transaction_size=args.transaction_size, security=security
    )
    return Destination(target, {"topic": topic, "bootstrap": bootstrap}, f"topic {topic!r} at {bootstrap}")


def _kinesis(args: argparse.Namespace, source: KinesisSource, shards_needed: int) -> Destination:
    """Credentials: the TIDEMARK_KINESIS_* keys of this process's environment (the embedded stack
    sets the loopback's; under Airflow the operator writes them from source.aws_conn_id), else
    boto3's default chain; never shown. The generator is a tool beside the platform: it reads no
    Airflow connection itself."""
    if args.kinesis_stream or args.kinesis_endpoint:
        overrides = {
            "stream": args.kinesis_stream or source.stream,
            "endpoint": args.kinesis_endpoint or source.endpoint,
        }
        source = msgspec.structs.replace(source, **overrides)
    try:
        access = KinesisAccess.from_source(source)
    except KinesisAccessError as error:
        raise KinesisSinkError(f"the credentials for Kinesis stream {source.stream!r}: {error}") from None
    sink = KinesisSink(access, shards_needed)
    where = access.endpoint or f"region {access.region}"
    return Destination(
        sink,
        {"kinesis_stream": access.stream, "region": access.region, "endpoint": access.endpoint},
        f"Kinesis stream {access.stream!r} at {where}",
        after=lambda: {"retried_records": sink.retried_records},
    )


_OPENERS = {KafkaSource: _kafka, KinesisSource: _kinesis}

# The override flags of each kind of destination (argparse destinations → their flags).
_FLAGS = {
    KafkaSource: {"bootstrap": "--bootstrap", "topic": "--topic", "transaction_size": "--transaction-size"},
    KinesisSource: {"kinesis_stream": "--kinesis-stream", "kinesis_endpoint": "--kinesis-endpoint"},
}


def foreign_flag(args: argparse.Namespace, stream: StreamConfig) -> str | None:
    """The message for the first override flag given that belongs to another kind of log than
    the stream's; None when every flag given is the stream's kind's."""
    own = _FLAGS[type(stream.source)]
    for flags in _FLAGS.values():
        for name, flag in flags.items():
            if name not in own and getattr(args, name, None) is not None:
                kind = stream.source.kind
                return f"argument {flag}: stream {stream.name!r} is read from {kind} (source.kind), not this"
    return None


def open_destination(args: argparse.Namespace, stream: StreamConfig, partitions_needed: int) -> Destination:
    """The stream's topic or Kinesis stream, with the command line's overrides, checked and ready
    for ``partitions_needed`` partitions (Kinesis: open shards). Raises one of
    DESTINATION_ERRORS when it cannot take them."""
    return _OPENERS[type(stream.source)](args, stream.source, partitions_needed)
