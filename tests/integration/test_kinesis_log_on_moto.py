"""The driver's Kinesis log (connectors.kinesis_log) with real boto3 calls against a moto server on
loopback: fill, take and read_range over a 4-shard stream, a split and a merge while reading
(children read only after their parents are consumed, every record once), a stream that does not
exist, an endpoint that does not answer, and the keys of a stream's AWS connection (TIDEMARK_KINESIS_*)
used over boto3's default chain and, refused, named (on a server of its own with moto's IAM checks on).

The server is the session's loopback Kinesis (the ``loopback_kinesis`` fixture): moto with its
resharding corrected to Kinesis's (stack.moto_kinesis: closed shards take no records, parents keep
theirs, children start empty), so the test checks tidemark's rules rather than moto's emulation.
Everything else is moto as it ships: small integer sequence numbers (56-digit ones are covered by
tests/unit/test_kinesis_log.py), and NextShardIterator kept on closed shards (finished is "closed
and caught up" there). Streams outlive tests on the shared server: each test names its own.
"""

from __future__ import annotations

import time
import urllib.request
import uuid
from collections.abc import Iterator

import boto3
import pytest

from connectors.kinesis_api import (
    KinesisCredentialsError,
    KinesisEndpointError,
    KinesisStreamNotFoundError,
    kinesis_client,
)
from connectors.kinesis_log import KinesisLog
from connectors.kinesis_shard_reads import read_range
from stack.loopback_kinesis import LoopbackKinesis
from stack.ports import free_port
from tidemark.kinesis_access import CREDENTIAL_VARIABLES

pytestmark = pytest.mark.integration

REGION = "us-east-1"


@pytest.fixture
def endpoint(loopback_kinesis) -> str:
    return loopback_kinesis.endpoint


@pytest.fixture
def stream_name(request) -> str:
    """A name of this test's own on the session's server (streams outlive tests there)."""
    return f"kinesis-log-{request.node.name[5:40].replace('_', '-')}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(autouse=True)
def credentials(monkeypatch):
    # moto accepts any key; boto3's default chain reads them from the environment.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    for name in CREDENTIAL_VARIABLES:  # keys of a stream's AWS connection would win over the chain
        monkeypatch.delenv(name, raising=False)


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


def test_fill_take_and_read_range_over_four_shards(endpoint, stream_name):
    client = _stream(endpoint, stream_name, 4)
    written = _put(client, stream_name, 0, 40)
    log = KinesisLog(stream_name, REGION, endpoint)
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
                read_range(stream_name, REGION, endpoint, shard.shard_id, positions[partition], bounds[partition].end)
            )
            assert replayed == records
            if len(records) > 2:
                middle = read_range(
                    stream_name, REGION, endpoint, shard.shard_id, records[1].sequence, records[-1].sequence
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


def test_split_and_merge_while_reading_children_after_parents_every_record_once(endpoint, stream_name):
    stream = stream_name
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


def test_a_stream_that_does_not_exist_is_named(endpoint, stream_name):
    log = KinesisLog(stream_name, REGION, endpoint)
    try:
        with pytest.raises(KinesisStreamNotFoundError) as raised:
            log.shards()
        assert f"'{stream_name}'" in str(raised.value) and endpoint in str(raised.value)
    finally:
        log.close()


def test_an_endpoint_that_does_not_answer_fails_fast_naming_it():
    silent = f"http://127.0.0.1:{free_port()}"
    log = KinesisLog("rides", REGION, silent)
    started = time.monotonic()
    try:
        with pytest.raises(KinesisEndpointError) as raised:
            log.shards()
    finally:
        log.close()
    assert time.monotonic() - started < 10
    assert silent in str(raised.value) and "'rides'" in str(raised.value)


@pytest.fixture
def checking_moto(tmp_path) -> Iterator[tuple[LoopbackKinesis, dict[str, str]]]:
    """A loopback Kinesis of this test's own that checks keys (moto's IAM emulation, switched on
    through /moto-api/reset-auth once a user with a kinesis:* policy exists): yields the server and
    that user's key pair. Not the session's server: keys checked there would refuse every other test."""
    server = LoopbackKinesis(state_dir=tmp_path / "kinesis", port=free_port())
    server.start()
    try:
        iam = boto3.client(  # moto serves IAM on the same port
            "iam",
            endpoint_url=server.endpoint,
            region_name=server.region,
            aws_access_key_id=server.access_key_id,
            aws_secret_access_key=server.secret_access_key,
        )
        iam.create_user(UserName="reader")
        iam.put_user_policy(
            UserName="reader",
            PolicyName="kinesis",
            PolicyDocument='{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "kinesis:*", "Resource": "*"}]}',
        )
        key = iam.create_access_key(UserName="reader")["AccessKey"]
        server.create_stream("checked", 1)
        # The count of requests still let through unchecked; a form body would hide it from moto.
        switch_on = urllib.request.Request(
            f"{server.endpoint}/moto-api/reset-auth", b"0", {"Content-Type": "text/plain"}, method="POST"
        )
        urllib.request.urlopen(switch_on, timeout=10).close()
        yield (
            server,
            {
                "TIDEMARK_KINESIS_ACCESS_KEY_ID": key["AccessKeyId"],
                "TIDEMARK_KINESIS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
            },
        )
    finally:
        server.stop()


def test_the_connections_keys_are_used_and_refused_ones_are_named(checking_moto, monkeypatch):
    server, known = checking_moto
    # The default chain holds keys moto does not know: the stream's connection's keys must win.
    for name, value in known.items():
        monkeypatch.setenv(name, value)
    log = KinesisLog("checked", REGION, server.endpoint)
    try:
        assert sorted(log.shards()) == [0]
    finally:
        log.close()

    monkeypatch.setenv("TIDEMARK_KINESIS_SECRET_ACCESS_KEY", "not-the-secret")
    log = KinesisLog("checked", REGION, server.endpoint)
    try:
        with pytest.raises(KinesisCredentialsError) as raised:
            log.shards()
    finally:
        log.close()
    message = str(raised.value)
    assert message.startswith(
        f"Kinesis refused the credentials (HTTP 403) on ListShards for stream 'checked' at endpoint {server.endpoint} "
        f"(region {REGION}): "
    )
    assert (raised.value.stream, raised.value.where) == ("checked", f"endpoint {server.endpoint} (region {REGION})")
    assert known["TIDEMARK_KINESIS_ACCESS_KEY_ID"] not in message and "not-the-secret" not in message
