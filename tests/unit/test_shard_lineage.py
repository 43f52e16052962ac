"""Kinesis resharding rules (tidemark.shard_lineage): which shard may be read, and when one is done."""

from __future__ import annotations

import pytest

from tidemark.shard_lineage import (
    ShardInfo,
    is_finished,
    partition_of,
    readable,
    shard_from_listing,
    shard_id_of,
    waiting_for,
)

START = 49590338271490256608559692538361571095921575989136588898
END = 49590338271490256608559692538361571095921575989136599999


def _shard(partition, parents=(), ending=None):
    return ShardInfo(partition, shard_id_of(partition), tuple(parents), START, ending)


def test_partition_is_the_shard_id_suffix():
    assert partition_of("shardId-000000000007") == 7
    assert partition_of("shardId-000000001799") == 1799
    assert shard_id_of(7) == "shardId-000000000007"


@pytest.mark.parametrize("bad", ["shard-7", "shardId-", "shardId-00x1", "7", "shardId-000000000007 "])
def test_other_shard_ids_fail_naming_the_id(bad):
    with pytest.raises(ValueError, match=repr(bad).replace("(", r"\(")):
        partition_of(bad)


def test_listing_entry_becomes_shard_info():
    merged = shard_from_listing(
        {
            "ShardId": "shardId-000000000004",
            "ParentShardId": "shardId-000000000002",
            "AdjacentParentShardId": "shardId-000000000003",
            "SequenceNumberRange": {"StartingSequenceNumber": str(START), "EndingSequenceNumber": str(END)},
        }
    )
    assert merged == ShardInfo(4, "shardId-000000000004", (2, 3), START, END)
    assert merged.closed
    fresh = shard_from_listing(
        {"ShardId": "shardId-000000000000", "SequenceNumberRange": {"StartingSequenceNumber": "0"}}
    )
    assert fresh == ShardInfo(0, "shardId-000000000000", (), 0, None)
    assert not fresh.closed


def test_split_children_wait_for_their_parent():
    shards = {0: _shard(0, ending=END), 1: _shard(1, [0]), 2: _shard(2, [0])}
    assert readable(0, shards, finished=set())
    assert not readable(1, shards, finished=set())
    assert waiting_for(2, shards, finished=set()) == (0,)
    assert readable(1, shards, finished={0})
    assert readable(2, shards, finished={0})


def test_merge_child_waits_for_both_parents():
    shards = {1: _shard(1, ending=END), 2: _shard(2, ending=END), 3: _shard(3, [1, 2])}
    assert waiting_for(3, shards, finished=set()) == (1, 2)
    assert waiting_for(3, shards, finished={2}) == (1,)
    assert not readable(3, shards, finished={1})
    assert readable(3, shards, finished={1, 2})


def test_parent_no_longer_listed_counts_as_finished():
    # Shard 0 expired with all its records: ListShards no longer names it.
    shards = {1: _shard(1, [0]), 3: _shard(3, [1, 2]), 2: _shard(2, ending=END)}
    assert readable(1, shards, finished=set())
    assert waiting_for(3, shards, finished=set()) == (1, 2)
    assert waiting_for(3, shards, finished={2}) == (1,)


def test_unknown_partition_waits_for_nothing():
    assert readable(9, {}, finished=set())


def test_open_shard_is_never_finished():
    shard = _shard(0)
    assert not is_finished(shard, START + 10**20, caught_up=True, next_iterator_missing=False)


def test_closed_shard_finished_when_kinesis_drops_the_iterator():
    assert is_finished(_shard(0, ending=END), START, caught_up=False, next_iterator_missing=True)


def test_closed_shard_finished_when_caught_up():
    # moto keeps returning NextShardIterator on closed shards: caught up is enough once closed.
    assert is_finished(_shard(0, ending=END), START, caught_up=True, next_iterator_missing=False)
    assert not is_finished(_shard(0, ending=END), START, caught_up=False, next_iterator_missing=False)


def test_closed_shard_finished_when_position_passed_its_end():
    shard = _shard(0, ending=END)
    assert not is_finished(shard, END, caught_up=False, next_iterator_missing=False)
    assert is_finished(shard, END + 1, caught_up=False, next_iterator_missing=False)
