"""The loopback Kinesis as the embedded stack runs it (`tidemark up kinesis`, `services`,
`create-kinesis-stream`, `down`) and as the tests use it (the ``loopback_kinesis`` fixture):
real boto3 calls, no Spark."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from connectors.jars import shared_jars_root
from stack.environment import LOOPBACK_KINESIS_IDENTITY
from stack.errors import StackError
from stack.loopback_kinesis import LoopbackKinesis
from stack.ports import free_port, port_answers

pytestmark = pytest.mark.integration


def test_the_stack_starts_the_loopback_kinesis_under_its_home_creates_a_stream_and_stops_it(tmp_path):
    port = free_port()
    home = tmp_path / "home"
    env = {
        **os.environ,
        "TIDEMARK_HOME": str(home),
        "TIDEMARK_KINESIS_PORT": str(port),
        # `tidemark up` checks the jars of every group first; the shared folder holds them.
        "TIDEMARK_JARS": str(shared_jars_root()),
    }

    def tidemark(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "tidemark_cli", *args], env=env, capture_output=True, text=True, timeout=120
        )

    endpoint = f"http://127.0.0.1:{port}"
    started = tidemark("up", "kinesis")
    try:
        assert started.returncode == 0, started.stderr
        assert started.stdout.strip() == (
            f"Loopback Kinesis started on {endpoint} (streams in memory; log in {home / 'kinesis' / 'moto.out'})."
        )
        assert (home / "kinesis" / "moto.pid").is_file()
        status = tidemark("services", "kinesis")
        assert status.returncode == 0 and status.stdout.strip().endswith(f"on {endpoint}, answering")
        assert tidemark("up", "kinesis").stdout.strip() == f"Loopback Kinesis is already running on {endpoint}."

        created = tidemark("create-kinesis-stream", "rides", "--shards", "3")
        assert created.returncode == 0, created.stderr
        assert created.stdout.strip() == f"Created Kinesis stream 'rides' with 3 shards at {endpoint}."
        again = tidemark("create-kinesis-stream", "rides", "--shards", "3")
        assert again.stdout.strip() == f"Kinesis stream 'rides' already exists with 3 shards at {endpoint}."
        other = tidemark("create-kinesis-stream", "rides", "--shards", "4")
        assert other.returncode == 1
        assert " ".join(other.stderr.split()) == (
            f"error: Kinesis stream 'rides' at {endpoint} exists with 3 open shards, not 4: delete it first, "
            "or fix source.shards in the stream configuration"
        )
        assert LOOPBACK_KINESIS_IDENTITY[1] not in started.stdout + status.stdout + created.stdout
    finally:
        stopped = tidemark("down", "kinesis")
    assert stopped.stdout.strip() == "Loopback Kinesis stopped (its streams are gone)."
    assert not port_answers(port)
    assert not (home / "kinesis" / "moto.pid").exists()
    assert tidemark("down", "kinesis").stdout.strip() == "Loopback Kinesis is not running."
    assert tidemark("services", "kinesis").returncode == 3


def test_a_record_put_on_a_two_shard_stream_is_read_back_from_its_shard(loopback_kinesis):
    assert loopback_kinesis.create_stream("loopback-put-get", 2) == (
        f"Created Kinesis stream 'loopback-put-get' with 2 shards at {loopback_kinesis.endpoint}."
    )
    client = loopback_kinesis.client()
    shards = client.list_shards(StreamName="loopback-put-get")["Shards"]
    assert [shard["ShardId"] for shard in shards] == ["shardId-000000000000", "shardId-000000000001"]
    second = shards[1]["HashKeyRange"]["StartingHashKey"]

    put = client.put_record(
        StreamName="loopback-put-get", Data=b'{"device_id":"s-1"}', PartitionKey="s-1", ExplicitHashKey=second
    )

    assert put["ShardId"] == "shardId-000000000001"
    iterator = client.get_shard_iterator(
        StreamName="loopback-put-get", ShardId="shardId-000000000001", ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    page = client.get_records(ShardIterator=iterator)
    assert [(r["Data"], r["PartitionKey"], r["SequenceNumber"]) for r in page["Records"]] == [
        (b'{"device_id":"s-1"}', "s-1", put["SequenceNumber"])
    ]
    assert page["MillisBehindLatest"] == 0


def test_starting_twice_keeps_the_running_server_and_its_streams(loopback_kinesis):
    loopback_kinesis.create_stream("loopback-kept", 1)
    pid = loopback_kinesis.daemon.pid()

    assert loopback_kinesis.start() == f"Loopback Kinesis is already running on {loopback_kinesis.endpoint}."

    assert loopback_kinesis.daemon.pid() == pid
    assert loopback_kinesis.create_stream("loopback-kept", 1) == (
        f"Kinesis stream 'loopback-kept' already exists with 1 shards at {loopback_kinesis.endpoint}."
    )


def test_a_port_another_program_holds_fails_naming_the_variable_that_moves_it(tmp_path, loopback_kinesis):
    taken = LoopbackKinesis(state_dir=tmp_path / "kinesis", port=loopback_kinesis.port)

    with pytest.raises(StackError, match=r"already in use .*export TIDEMARK_KINESIS_PORT="):
        taken.start()
    assert taken.stop() == "Loopback Kinesis is not running."


def _shard_data(client, stream: str) -> dict[str, list[bytes]]:
    """Every shard's records from TRIM_HORIZON, by shard id."""
    held = {}
    for shard in client.list_shards(StreamName=stream)["Shards"]:
        iterator = client.get_shard_iterator(
            StreamName=stream, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        held[shard["ShardId"]] = [record["Data"] for record in client.get_records(ShardIterator=iterator)["Records"]]
    return held


def test_a_split_closes_its_parent_and_a_merge_child_holds_only_what_was_put_after_the_merge(loopback_kinesis):
    # Kinesis's resharding, not moto's (stack.moto_kinesis): a closed shard takes no records and
    # keeps its own; children start empty. Explicit hash keys choose the shard each record belongs to.
    stream = "loopback-resharded"
    loopback_kinesis.create_stream(stream, 1)
    client = loopback_kinesis.client()
    top = 2**128 - 1
    middle = 2**127
    low_key, high_key, top_key = str(middle - 1), str(middle), str(top)  # both ends of each child's range

    def put(data: bytes, key: str) -> None:
        client.put_record(StreamName=stream, Data=data, PartitionKey="k", ExplicitHashKey=key)

    put(b"before-split-low", low_key)
    put(b"before-split-high", top_key)
    client.split_shard(StreamName=stream, ShardToSplit="shardId-000000000000", NewStartingHashKey=str(middle))
    put(b"after-split-low", low_key)
    put(b"after-split-high", high_key)
    put(b"after-split-top", top_key)
    client.merge_shards(
        StreamName=stream, ShardToMerge="shardId-000000000001", AdjacentShardToMerge="shardId-000000000002"
    )
    put(b"after-merge-low", "0")
    put(b"after-merge-top", top_key)

    assert _shard_data(client, stream) == {
        "shardId-000000000000": [b"before-split-low", b"before-split-high"],
        "shardId-000000000001": [b"after-split-low"],
        "shardId-000000000002": [b"after-split-high", b"after-split-top"],
        "shardId-000000000003": [b"after-merge-low", b"after-merge-top"],
    }
    shards = {shard["ShardId"]: shard for shard in client.list_shards(StreamName=stream)["Shards"]}
    closed = {shard_id for shard_id, shard in shards.items() if "EndingSequenceNumber" in shard["SequenceNumberRange"]}
    assert closed == {"shardId-000000000000", "shardId-000000000001", "shardId-000000000002"}
    assert [shards[f"shardId-00000000000{n}"]["HashKeyRange"] for n in (1, 2, 3)] == [
        {"StartingHashKey": "0", "EndingHashKey": str(middle - 1)},
        {"StartingHashKey": str(middle), "EndingHashKey": str(top)},
        {"StartingHashKey": "0", "EndingHashKey": str(top)},
    ]
    assert (
        shards["shardId-000000000003"]["ParentShardId"],
        shards["shardId-000000000003"]["AdjacentParentShardId"],
    ) == (
        "shardId-000000000001",
        "shardId-000000000002",
    )
