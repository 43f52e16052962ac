"""What the quality run and the watermark page ask of a stream's log now.

``read_log_bounds(stream, positions)`` → {partition: bounds}, each with at least ``earliest`` and
``end`` (expectations.quality_verdicts.LogBoundsView), asked of the log the stream's connection
names (tidemark.partitioned_log.PartitionedLog.bounds_now): Kafka's connectors.kafka_log.LogBounds
from ListOffsets; a Kinesis shard's connectors.kinesis_lookups.ShardLogBounds from a probe at the
lake's position.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from tidemark.partitioned_log import PartitionedLog
from tidemark.stream_config import StreamConfig


def read_log_bounds(
    stream: StreamConfig,
    positions: Mapping[int, int] | None = None,
    finished: Collection[int] = (),
    *,
    timeout_s: float | None = None,
    check_retention: bool = True,
    log: PartitionedLog | None = None,
) -> dict:
    """Every partition of the stream's log → its bounds now.

    ``positions``: the lake's live position per partition (where a log that must probe reads);
    ``finished``: partitions the ledger marks FINISHED. ``check_retention``: also ask whether
    records expired unread at the positions, where the bounds cannot say it. ``log``: an opened
    log to ask instead of the stream's (a test's stand-in); the caller closes it.
    Raises ValueError when the topic or stream does not exist, and the log's own errors
    (KafkaUnavailableError, connectors.kinesis_api.KinesisUnavailableError) when it cannot be
    read; each names the topic or stream and where it was looked for."""
    if log is not None:
        return log.bounds_now(positions or {}, finished, check_retention)
    from connectors.partitioned_logs import open_log

    opened = open_log(stream.source.connection(), timeout_s=timeout_s)
    try:
        return opened.bounds_now(positions or {}, finished, check_retention)
    finally:
        opened.close()
