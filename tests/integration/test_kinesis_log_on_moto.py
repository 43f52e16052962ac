"""The driver's Kinesis log (connectors.kinesis_log) with real boto3 calls against a moto server on
loopback: fill, take and read_range over a 4-shard stream, a split and a merge while reading
(children read only after their parents are consumed, every record once), a stream that does not
exist, an endpoint that does not answer.

moto 5.2's resharding is not Kinesis's: after a split or merge it keeps routing new records to
the closed parent (it matches hash keys over every shard, closed ones included), a split re-puts
the parent's records into the parent, and a merge copies both parents' records into the child
(every record twice). The server here is moto with those three corrected as Kinesis documents
them (closed shards take no records, parents keep theirs, children start empty), so the test
checks tidemark's rules rather than moto's emulation. Everything else is moto as it ships: small
integer sequence numbers (56-digit ones are covered by tests/unit/test_kinesis_log.py), and
NextShardIterator kept on closed shards (finished is "closed and caught up" there).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from connectors.kinesis_log import (
    KinesisEndpointError,
    KinesisLog,
    KinesisStreamNotFoundError,
    kinesis_client,
    read_range,
)

pytestmark = pytest.mark.integration

REGION = "us-east-1"

# Runs moto's server with Kinesis resharding as the real service does it (see the module doc).
_KINESIS_LIKE_MOTO = r"""
import hashlib, sys
from moto.kinesis import models

def get_shard_for_key(self, partition_key, explicit_hash_key):
    key = int(explicit_hash_key) if explicit_hash_key else int(hashlib.md5(partition_key.encode()).hexdigest(), 16)
    for shard in list(self.shards.values()):
        if shard.is_open and shard.starting_hash <= key <= shard.ending_hash:
            return shard
    return None

def _next_id(self):
    return max(shard._shard_id for shard in self.shards.values()) + 1

def split_shard(self, shard_to_split, new_starting_hash_key):
    parent = self.shards[shard_to_split]
    middle = int(new_starting_hash_key)
    first = _next_id(self)
    for number, (low, high) in enumerate([(parent.starting_hash, middle - 1), (middle, parent.ending_hash)], first):
        child = models.Shard(number, low, high, parent=parent.shard_id)
        self.shards[child.shard_id] = child
    parent.is_open = False

def merge_shards(self, shard_to_merge, adjacent_shard_to_merge):
    one, other = self.shards[shard_to_merge], self.shards[adjacent_shard_to_merge]
    child = models.Shard(_next_id(self), min(one.starting_hash, other.starting_hash),
                         max(one.ending_hash, other.ending_hash), parent=one.shard_id, adjacent_parent=other.shard_id)
    self.shards[child.shard_id] = child
    one.is_open = other.is_open = False

models.Stream.get_shard_for_key = get_shard_for_key
models.Stream.split_shard = split_shard
models.Stream.merge_shards = merge_shards

from moto.server import main
main(["-H", "127.0.0.1", "-p", sys.argv[1]])
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory) -> Iterator[str]:
    port = _free_port()
    log_path = tmp_path_factory.mktemp("moto") / "moto.log"
    with open(log_path, "wb") as server_log:
        server = subprocess.Popen(
            [sys.executable, "-c", _KINESIS_LIKE_MOTO, str(port)], stdout=server_log, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto did not start on port {port}: {log_path.read_text()}") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(10)


@pytest.fixture(autouse=True)
def credentials(monkeypatch):
    # moto accepts any key; boto3's default chain reads them from the environment.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def _stream(endpoint: str, name: str, shards: int):
    client = kinesis_client(REGION, endpoint)
    client.create_stream(StreamName=name, ShardCount=shards)
    return client


def _put(client, stream: str, first: int, count: int) -> list[bytes]:
    data = [f"record-{n}".encode() for n in range(first, first + count)]
    client.put_records(StreamName=stream, Records=[{"Data": d, "PartitionKey": d.decode()} for d in data])
    return data


def _take_all(log: KinesisLog, positions: dict[int, int], order: list[tuple[int, bytes]]) -> dict[int, int]:
    """Take every readable buffered record of every shard, as the source would, in plan order."""
    bounds = log.bounds()
    moved = dict(positions)
    for partition, position in sorted(positions.items()):
        end = bounds[partition].end
        records = log.take(partition, position, end)
        assert records is not None
        order.extend((partition, record.data) for record in records)
        moved[partition] = end
    return moved


def test_fill_take_and_read_range_over_four_shards(endpoint):
    client = _stream(endpoint, "four-shards", 4)
    written = _put(client, "four-shards", 0, 40)
    log = KinesisLog("four-shards", REGION, endpoint)
    try:
        shards = log.shards()
        assert sorted(shards) == [0, 1, 2, 3]
        positions = {p: shard.starting_sequence for p, shard in shards.items()}
        log.fill(positions, target_ms=None, max_records=None)
        bounds = log.bounds()
        assert all(b.caught_up and not b.finished and b.waiting_for == () for b in bounds.values())
        taken = {}
        for partition, shard in shards.items():
            records = log.take(partition, positions[partition], bounds[partition].end)
            assert log.records_between(partition, positions[partition], bounds[partition].end) == len(records)
            taken[partition] = records
            replayed = list(
                read_range("four-shards", REGION, endpoint, shard.shard_id, positions[partition], bounds[partition].end)
            )
            assert replayed == records
            if len(records) > 2:
                middle = read_range(
                    "four-shards", REGION, endpoint, shard.shard_id, records[1].sequence, records[-1].sequence
                )
                assert list(middle) == records[1:-1]
                assert log.position_after(partition, positions[partition], 2) == records[1].sequence + 1
        assert sorted(record.data for records in taken.values() for record in records) == sorted(written)
        assert log.throttled_calls == 0
        # Consumed, then quiet: the next fill reads nothing new and each shard stays caught up.
        log.fill({p: bounds[p].end for p in shards}, None, None)
        assert all(log.bounds()[p].end == bounds[p].end and log.bounds()[p].caught_up for p in shards)
    finally:
        log.close()


def test_split_and_merge_while_reading_children_after_parents_every_record_once(endpoint):
    stream = "resharded"
    client = _stream(endpoint, stream, 2)
    written = _put(client, stream, 0, 20)
    log = KinesisLog(stream, REGION, endpoint, shard_refresh_s=0)
    order: list[tuple[int, bytes]] = []
    try:
        positions = {p: shard.starting_sequence for p, shard in log.shards().items()}
        log.fill(positions, None, max_records=3)
        positions = _take_all(log, positions, order)

        # Split shard 0 (children 2 and 3), write, merge the children (child 4), write again.
        shard_0 = client.list_shards(StreamName=stream)["Shards"][0]
        low, high = int(shard_0["HashKeyRange"]["StartingHashKey"]), int(shard_0["HashKeyRange"]["EndingHashKey"])
        client.split_shard(
            StreamName=stream, ShardToSplit=shard_0["ShardId"], NewStartingHashKey=str((low + high) // 2)
        )
        written += _put(client, stream, 20, 20)
        client.merge_shards(
            StreamName=stream, ShardToMerge="shardId-000000000002", AdjacentShardToMerge="shardId-000000000003"
        )
        written += _put(client, stream, 40, 20)

        waited: set[int] = set()
        for _ in range(30):
            for partition, shard in log.shards().items():
                positions.setdefault(partition, shard.starting_sequence)
            log.fill(positions, None, max_records=5)
            bounds = log.bounds()
            waited |= {p for p, b in bounds.items() if b.waiting_for}
            positions = _take_all(log, positions, order)
            if sorted(data for _, data in order) == sorted(written) and all(
                b.finished or b.caught_up for b in log.bounds().values()
            ):
                break
        assert sorted(data for _, data in order) == sorted(written)  # every record once
        assert waited == {2, 3, 4}
        position_in_order = {}
        for index, (partition, _) in enumerate(order):
            position_in_order.setdefault(partition, []).append(index)
        shards = log.shards()
        for child in (2, 3, 4):
            for parent in shards[child].parents:
                if position_in_order.get(child) and position_in_order.get(parent):
                    assert max(position_in_order[parent]) < min(position_in_order[child]), (parent, child)
        assert all(position_in_order.get(p) for p in (0, 1, 2, 3, 4))  # each shard held records
        assert log.bounds()[0].finished and log.bounds()[2].finished and log.bounds()[3].finished
        assert not log.bounds()[4].finished and not log.bounds()[1].finished  # open shards never are
    finally:
        log.close()


def test_a_stream_that_does_not_exist_is_named(endpoint):
    log = KinesisLog("no-such-stream", REGION, endpoint)
    try:
        with pytest.raises(KinesisStreamNotFoundError) as raised:
            log.shards()
        assert "'no-such-stream'" in str(raised.value) and endpoint in str(raised.value)
    finally:
        log.close()


def test_an_endpoint_that_does_not_answer_fails_fast_naming_it():
    silent = f"http://127.0.0.1:{_free_port()}"
    log = KinesisLog("rides", REGION, silent)
    started = time.monotonic()
    try:
        with pytest.raises(KinesisEndpointError) as raised:
            log.shards()
    finally:
        log.close()
    assert time.monotonic() - started < 10
    assert silent in str(raised.value) and "'rides'" in str(raised.value)
