"""Kinesis resharding as tidemark reads it: a shard is a partition, and a child is read only
after its parents are read to their end.

A split closes one shard and opens two children; a merge closes two and opens one. The records
of a hash key continue in the child, so a child read before its parent is finished would admit
later event times first, raise the global watermark and route the parent's unread records late.
Hence the parent-first rule (Flink's SplitTracker, the KCL's BlockOnParentShardTask): a child is
readable only when every parent is finished, and a parent no longer listed (its records all
expired) counts as finished, since nothing of it is left to read.

Positions are Kinesis sequence numbers held as ``int`` (exact, ordered; real ones are 56 decimal
digits). A position is "next to read": after a record with sequence s the position is s + 1.
Sequence numbers are sparse, so positions are compared, never subtracted to count records.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

_SHARD_ID = re.compile(r"shardId-(\d{1,20})")


@dataclass(frozen=True)
class ShardInfo:
    """One shard of a stream, as ListShards describes it.

    ``parents``: the partitions of ParentShardId and AdjacentParentShardId (empty for a shard of
    the stream's creation). ``starting_sequence``: the shard's StartingSequenceNumber, the
    position of a shard never read. ``ending_sequence``: the EndingSequenceNumber of a closed
    shard (no record after it will ever be written), None while the shard is open.
    """

    partition: int
    shard_id: str
    parents: tuple[int, ...]
    starting_sequence: int
    ending_sequence: int | None = None

    @property
    def closed(self) -> bool:
        return self.ending_sequence is not None


def partition_of(shard_id: str) -> int:
    """The partition number of a shard id: its integer suffix (``shardId-000000000007`` → 7).

    Raises ValueError naming the shard id for any other shape: partitions must name shards
    the same way in every process and after every restart.
    """
    match = _SHARD_ID.fullmatch(shard_id)
    if match is None:
        raise ValueError(
            f"shard id {shard_id!r} is not of the form 'shardId-<digits>': tidemark numbers partitions by "
            "that suffix; check that the stream is a Kinesis Data Stream and the endpoint a Kinesis endpoint"
        )
    return int(match.group(1))


def shard_id_of(partition: int) -> str:
    """The shard id Kinesis gives partition ``partition`` (12 digits, zero-padded)."""
    return f"shardId-{partition:012d}"


def shard_from_listing(shard: Mapping) -> ShardInfo:
    """A ShardInfo from one entry of a ListShards answer (a dict as the API returns it)."""
    sequence_range = shard["SequenceNumberRange"]
    parents = tuple(partition_of(shard[key]) for key in ("ParentShardId", "AdjacentParentShardId") if shard.get(key))
    ending = sequence_range.get("EndingSequenceNumber")
    return ShardInfo(
        partition=partition_of(shard["ShardId"]),
        shard_id=shard["ShardId"],
        parents=parents,
        starting_sequence=int(sequence_range["StartingSequenceNumber"]),
        ending_sequence=None if ending is None else int(ending),
    )


def waiting_for(partition: int, shards: Mapping[int, ShardInfo], finished: Collection[int]) -> tuple[int, ...]:
    """The parents of ``partition`` that still hold records to read: listed in ``shards`` and not
    in ``finished``. A parent no longer listed expired with all its records: it counts as
    finished. An unknown ``partition`` waits for nothing (it has no listed lineage)."""
    shard = shards.get(partition)
    if shard is None:
        return ()
    return tuple(parent for parent in shard.parents if parent in shards and parent not in finished)


def readable(partition: int, shards: Mapping[int, ShardInfo], finished: Collection[int]) -> bool:
    """True when ``partition`` may be read past its first record: every parent is finished
    (or no longer listed)."""
    return not waiting_for(partition, shards, finished)


def is_finished(shard: ShardInfo, position: int, caught_up: bool, next_iterator_missing: bool) -> bool:
    """True when ``shard`` is closed and read to its end from ``position`` (next to read).

    Any of: GetRecords returned no NextShardIterator (Kinesis's own "shard end"); the shard is
    closed and the reader is caught up (an empty page with MillisBehindLatest 0: moto never drops
    NextShardIterator on closed shards, real Kinesis does); or the position is past the shard's
    EndingSequenceNumber. An open shard is never finished, however long it is quiet.
    """
    if next_iterator_missing:
        return True
    if shard.ending_sequence is None:
        return False
    return caught_up or position > shard.ending_sequence
