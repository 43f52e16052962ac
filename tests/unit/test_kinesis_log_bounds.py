"""connectors.log_bounds on a Kinesis stream (connectors.kinesis_lookups.bounds_now): the quality run's and the watermark page's questions
answered by one probe per shard at the lake's position, on the in-memory Kinesis with real-shaped
(56-digit, sparse) sequence numbers. Expected values come from what the test put, never from
subtracting sequence numbers."""

from __future__ import annotations

import pytest

from connectors.kinesis_log import KinesisLog
from connectors.log_bounds import read_log_bounds
from harness.fake_kinesis import FakeKinesis, SecondsClock
from tidemark.stream_config import load_stream

STREAM = "rides"
NOW_S = 1_790_000_000.0
T0 = int(NOW_S * 1000) - 60_000
HOUR_MS = 3_600_000


@pytest.fixture
def clock():
    return SecondsClock(NOW_S)


@pytest.fixture
def kinesis(clock):
    return FakeKinesis(STREAM, clock)


@pytest.fixture
def stream(tmp_path):
    import yaml

    from harness.persist_job import REPO

    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    telemetry = document["streams"]["telemetry"]
    telemetry["source"] = {"kind": "kinesis", "stream": STREAM, "region": "eu-west-1", "shards": 2}
    telemetry["lake"] = {"root": str(tmp_path / "lake"), "checkpoint_root": str(tmp_path / "checkpoints")}
    document["streams"] = {"telemetry": telemetry}
    path = tmp_path / "streams.yaml"
    path.write_text(yaml.safe_dump(document))
    return load_stream(path, "telemetry")


def _bounds(stream, kinesis, clock, positions, finished=(), **kwargs):
    log = KinesisLog(STREAM, "eu-west-1", None, client=kinesis, clock=clock, sleep=clock.sleep, max_workers=4)
    try:
        return read_log_bounds(stream, positions, finished, log=log, **kwargs)
    finally:
        log.close()


def test_unread_records_and_caught_up_shards_are_told_apart_without_arithmetic(stream, kinesis, clock):
    kinesis.add_shard(0)
    kinesis.add_shard(1)
    first, second = kinesis.put(0, T0, T0 + 1)
    (only,) = kinesis.put(1, T0 + 2)
    bounds = _bounds(stream, kinesis, clock, {0: first + 1, 1: only + 1})

    assert set(bounds) == {0, 1}
    behind, caught_up = bounds[0], bounds[1]
    assert behind.unread and behind.end == second + 1 and behind.position == first + 1
    assert behind.first_unread_ms == T0 + 1
    assert behind.shard_id == "shardId-000000000000" and not behind.finished and behind.lost is None
    assert not caught_up.unread and caught_up.caught_up and caught_up.end == only + 1
    assert caught_up.millis_behind_latest == 0 and caught_up.first_unread_ms is None
    assert behind.earliest == kinesis.shards["shardId-000000000000"].starting  # nothing expired


def test_a_shard_the_ledger_marks_finished_is_not_read(stream, kinesis, clock):
    kinesis.add_shard(0)
    (last,) = kinesis.put(0, T0)
    kinesis.split(0, 1)
    bounds = _bounds(stream, kinesis, clock, {0: last + 1}, finished={0})
    assert bounds[0].finished and not bounds[0].unread
    assert kinesis.get_records_calls("shardId-000000000000") == 0
    assert {1, 2} <= set(bounds)  # the children are listed: probed at their starting sequence


def test_a_young_stream_asks_no_trim_horizon(stream, kinesis, clock):
    kinesis.add_shard(0)
    (record,) = kinesis.put(0, T0)
    _bounds(stream, kinesis, clock, {0: record + 1})
    iterators = [call for call in kinesis.calls if call[0] == "GetShardIterator"]
    assert len(iterators) == 1  # the probe's; lost_to_retention asked nothing


def test_records_expired_unread_are_a_lost_sequence_range_of_the_shard(stream, kinesis, clock):
    kinesis.created_s = NOW_S - 40 * 3_600
    kinesis.add_shard(0)
    old = kinesis.put(0, T0 - 30 * HOUR_MS, T0 - 29 * HOUR_MS)
    (recent,) = kinesis.put(0, T0)
    kinesis.shards["shardId-000000000000"].trimmed = 2
    bounds = _bounds(stream, kinesis, clock, {0: old[0] + 1})
    lost = bounds[0].lost
    assert (lost.partition, lost.start, lost.end) == (0, old[0] + 1, recent)
    assert bounds[0].earliest == recent


def test_a_stream_that_does_not_exist_is_a_value_error_naming_it(stream, kinesis, clock):
    kinesis.fail["ListShards"] = "ResourceNotFoundException"
    with pytest.raises(ValueError, match="rides"):
        _bounds(stream, kinesis, clock, {})


def test_a_stalled_shards_end_is_its_tip_not_what_the_probe_read(stream, kinesis, clock):
    # 150 records unread, the newest three hours old: the probe reads 10, the tip is found by
    # looking back from now over widening arrival windows, so a recovery of [position, end) is
    # everything unread at the check (Lyft's stalled shard), not the probe's ten.
    kinesis.add_shard(0)
    put = kinesis.put(0, *[T0 - 3 * HOUR_MS - 150_000 + i * 1_000 for i in range(150)])
    bounds = _bounds(stream, kinesis, clock, {0: put[0]})

    assert bounds[0].unread and bounds[0].end == put[-1] + 1
    windows = [call[2] for call in kinesis.calls if call[0] == "GetShardIterator"]
    assert windows.count("AT_TIMESTAMP") == 4  # 1 min, 15 min, 2 h: nothing; 24 h: the newest
