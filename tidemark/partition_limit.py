"""The most partitions a stream's topic may have: a safety limit, source.max_partitions.

Every batch writes one ledger row per partition and plans every partition, so a topic that
grew by mistake (or a stream pointed at the wrong topic) multiplies the cost of every batch.
Past the limit the job fails before reading, naming the key and a value that would hold it.
"""

from __future__ import annotations

DEFAULT_MAX_PARTITIONS = 2048  # the seeds' largest stream had 1,800 shards


class PartitionLimitError(ValueError):
    """The topic has more partitions than source.max_partitions allows."""


def check_partition_limit(topic: str, partitions: int, max_partitions: int) -> None:
    """Raise PartitionLimitError when ``topic`` has more than ``max_partitions`` partitions."""
    if partitions > max_partitions:
        raise PartitionLimitError(
            f"topic {topic!r} has {partitions} partitions, more than source.max_partitions ({max_partitions}); "
            f"if that is expected, set source.max_partitions: {suggested_partition_limit(partitions)} for this stream"
        )


def suggested_partition_limit(partitions: int) -> int:
    """A limit with room for the topic to grow: the next multiple of 1,024 above ``partitions``."""
    return (partitions // 1024 + 1) * 1024
