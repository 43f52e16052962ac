"""The one place that knows which adapter reads which kind of log.

``open_log`` turns a stream's tidemark.log_connection.LogConnection into the
tidemark.partitioned_log.PartitionedLog that reads it: connectors.kafka_log.KafkaLog for a
KafkaConnection, connectors.kinesis_log.KinesisLog for a KinesisConnection. Every job, the Spark
source (driver and tasks) and the looks before a run open their log here; nothing else chooses
by kind. A new kind of log is a new connection Struct, a new adapter and one line below.

The adapters are imported when a log is opened, so that importing this module costs nothing
(DAG files, the CLI) and a process that reads Kafka never imports boto3.
"""

from __future__ import annotations

from tidemark.log_connection import KafkaConnection, KinesisConnection, LogConnection
from tidemark.partitioned_log import PartitionedLog


def _kafka(connection: KafkaConnection, role: str, timeout_s: float | None) -> PartitionedLog:
    from connectors.kafka_log import KafkaLog

    return KafkaLog.of(connection) if timeout_s is None else KafkaLog.of(connection, timeout_s)


def _kinesis(connection: KinesisConnection, role: str, timeout_s: float | None) -> PartitionedLog:
    from connectors.kinesis_log import KinesisLog

    # A task reads its shards one after the other: one connection is enough. Its client has its
    # own short timeouts (connectors.kinesis_api.kinesis_client).
    return KinesisLog.of(connection, max_workers=1 if role == "task" else 16)


_ADAPTERS = {KafkaConnection: _kafka, KinesisConnection: _kinesis}


def open_log(connection: LogConnection, role: str = "driver", timeout_s: float | None = None) -> PartitionedLog:
    """The log ``connection`` names, opened for a ``role``: "driver" (planning, look-ups) or
    "task" (a Spark task reading ranges). ``timeout_s``: how long a question may take (None:
    the adapter's default). The caller closes it."""
    try:
        opener = _ADAPTERS[type(connection)]
    except KeyError:
        raise TypeError(f"no adapter reads a {type(connection).__name__}") from None
    return opener(connection, role, timeout_s)
