"""Backfill by AT_TIMESTAMP and recovery by sequence ranges on a Kinesis stream, without a network:
a fake Kinesis (tests/harness/fake_kinesis.py) with real-shaped 56-digit, sparse sequence numbers,
answering AT_TIMESTAMP over the records' arrival times as Kinesis does.

Every expected range is derived here from the sequence numbers the fake handed out when the
records were put, never from the code under test.
"""

from __future__ import annotations

import datetime as dt

import pytest

from connectors.kinesis_log import KinesisLog
from connectors.kinesis_shard_reads import first_records_at
from harness.fake_kinesis import FakeKinesis, SecondsClock
from harness.kinesis_stream import write_kinesis_stream_config
from tidemark.aligned_slices import LoggedRecord
from tidemark.backfill_plan import LostPart, PartitionTimeIndex, kinesis_shard_index, plan_backfill
from tidemark.backfill_request import BackfillRequest, check_backfill_request, parse_backfill_request
from tidemark.offset_coverage import OffsetRange
from tidemark.recovery_request import (
    RecoveryRequest,
    RecoveryRequestError,
    check_recovery_request,
    parse_recovery_form,
)
from tidemark.stream_config import load_streams

T = 1_795_305_600_000  # 2026-11-22T00:00:00Z
MINUTE = 60_000
HOUR = 60 * MINUTE
STREAM = "scooter-telemetry"


class TimeIndexedKinesis(FakeKinesis):
    """The fake, answering AT_TIMESTAMP: an iterator at the first retained record that arrived at
    or after the time (past the last record when none did), as Kinesis's time index does."""

    def get_shard_iterator(self, StreamName, ShardId, ShardIteratorType, StartingSequenceNumber=None, Timestamp=None):
        if ShardIteratorType != "AT_TIMESTAMP":
            return super().get_shard_iterator(StreamName, ShardId, ShardIteratorType, StartingSequenceNumber)
        self._enter("GetShardIterator", ShardId, ShardIteratorType, Timestamp)
        shard = self.shards[ShardId]
        at_ms = round(Timestamp.timestamp() * 1000)
        first = next((seq for seq, arrival, _, _ in shard.retained() if arrival >= at_ms), shard.next_sequence)
        return {"ShardIterator": self._issue(ShardId, first)}


def _log(kinesis, clock) -> KinesisLog:
    """The Kinesis adapter over the fake, on the fake's clock."""
    return KinesisLog(STREAM, "us-east-1", None, client=kinesis, clock=clock, sleep=clock.sleep)


def _streams(tmp_path):
    conf = write_kinesis_stream_config(tmp_path, "http://127.0.0.1:9", STREAM, 4)
    return load_streams(conf)


@pytest.fixture
def resharded():
    """Shard 0 split into 1 and 2 at T+80m, shard 3 open with a record either side of the window,
    shard 4 open and never written. The stream is young: nothing has expired."""
    clock = SecondsClock((T + 5 * HOUR) / 1000)
    kinesis = TimeIndexedKinesis(STREAM, clock)
    for number in (0, 3, 4):
        kinesis.add_shard(number)
    puts = {0: kinesis.put(0, T + 10 * MINUTE, T + 40 * MINUTE, T + 70 * MINUTE)}
    kinesis.split(0, first_child=1)
    puts[1] = kinesis.put(1, T + 90 * MINUTE, T + 130 * MINUTE)
    puts[2] = kinesis.put(2, T + 100 * MINUTE)
    puts[3] = kinesis.put(3, T + 20 * MINUTE, T + 200 * MINUTE)
    return kinesis, clock, puts


def test_sequence_numbers_are_real_shaped():
    clock = SecondsClock(T / 1000)
    kinesis = TimeIndexedKinesis(STREAM, clock)
    kinesis.add_shard(0)
    first, second = kinesis.put(0, T, T + 1)
    assert len(str(first)) == 56 and second - first > 10**20, "the fake must hand out sparse 56-digit numbers"


def test_first_records_at_answers_by_arrival_time_per_shard_closed_and_quiet_ones_included(resharded):
    kinesis, clock, puts = resharded
    ids = [f"shardId-{n:012d}" for n in (0, 1, 2, 3, 4)]
    answers = first_records_at(
        STREAM, "us-east-1", None, ids, T + 30 * MINUTE, client=kinesis, clock=clock, sleep=clock.sleep
    )
    assert answers == {
        0: LoggedRecord(puts[0][1], T + 40 * MINUTE),
        1: LoggedRecord(puts[1][0], T + 90 * MINUTE),
        2: LoggedRecord(puts[2][0], T + 100 * MINUTE),
        3: LoggedRecord(puts[3][1], T + 200 * MINUTE),
        4: None,
    }
    after_the_split = first_records_at(
        STREAM, "us-east-1", None, ids[:1], T + 75 * MINUTE, client=kinesis, clock=clock, sleep=clock.sleep
    )
    assert after_the_split == {0: None}, "the closed parent holds nothing that arrived after its last record"
    assert clock.slept == []


def test_first_records_at_follows_empty_pages_while_behind_and_reads_the_trim_horizon(resharded):
    kinesis, clock, puts = resharded
    kinesis.behind_pages["shardId-000000000003"] = 3
    kinesis.shards["shardId-000000000003"].trimmed = 1  # the record of T+20m expired
    at = first_records_at(STREAM, "us-east-1", None, ["shardId-000000000003"], T, client=kinesis, clock=clock)
    assert at == {3: LoggedRecord(puts[3][1], T + 200 * MINUTE)}
    horizon = first_records_at(STREAM, "us-east-1", None, ["shardId-000000000003"], None, client=kinesis, clock=clock)
    assert horizon == at


def test_a_window_over_a_split_reads_the_parent_and_its_children_up_to_the_first_record_at_its_end(resharded, tmp_path):
    kinesis, clock, puts = resharded
    stream = _streams(tmp_path)["telemetry"]
    request = check_backfill_request(
        BackfillRequest("telemetry", T + 30 * MINUTE, T + 120 * MINUTE, ()), {"telemetry": stream}
    )
    assert request.partitions == (), "a Kinesis request without shards stays 'every shard': the job lists them"
    indexes = _log(kinesis, clock).backfill_indexes(request)
    plan = plan_backfill(request, indexes)
    parent_end = kinesis.shards["shardId-000000000000"].ending + 1
    assert plan.partitions == (0, 1, 2, 3, 4)
    assert plan.ranges == {
        0: OffsetRange(puts[0][1], parent_end),  # T+40m and T+70m; closed: up to its ending sequence
        1: OffsetRange(puts[1][0], puts[1][1]),  # T+90m, up to the record of T+130m
        2: OffsetRange(puts[2][0], puts[2][0] + 1),  # open and nothing after the window: read to its tip
    }
    assert plan.lost == ()
    # Shards named: only those; one the stream does not list is refused, naming it.
    named = plan_backfill(
        BackfillRequest("telemetry", T + 30 * MINUTE, T + 120 * MINUTE, (1,)),
        _log(kinesis, clock).backfill_indexes(BackfillRequest("telemetry", T + 30 * MINUTE, T + 120 * MINUTE, (1,))),
    )
    assert named.ranges == {1: OffsetRange(puts[1][0], puts[1][1])}
    from tidemark.backfill_request import BackfillRequestError

    with pytest.raises(BackfillRequestError, match=r"lists no shard shardId-000000000009 \(partition 9\)"):
        _log(kinesis, clock).backfill_indexes(BackfillRequest("telemetry", T, T + HOUR, (9,)))


@pytest.fixture
def expiring():
    """A stream created 48 h ago with a 24 h retention: shard 0's record of T−30h expired; shard
    1 has been quiet for longer than the retention (it retains nothing)."""
    clock = SecondsClock((T - 48 * HOUR) / 1000)
    kinesis = TimeIndexedKinesis(STREAM, clock, retention_hours=24)
    kinesis.add_shard(0)
    kinesis.add_shard(1)
    puts = kinesis.put(0, T - 30 * HOUR, T - 20 * HOUR, T - 10 * HOUR)
    kinesis.shards["shardId-000000000000"].trimmed = 1
    clock.now_s = T / 1000
    return kinesis, clock, puts


def test_a_window_older_than_the_retention_reports_what_may_have_expired_by_shard(expiring):
    kinesis, clock, puts = expiring
    request = BackfillRequest("telemetry", T - 36 * HOUR, T - 12 * HOUR, ())
    indexes = _log(kinesis, clock).backfill_indexes(request)
    retained_since = T - 24 * HOUR
    assert indexes[0] == PartitionTimeIndex(puts[1], puts[2], retained_since, puts[1], puts[2])
    assert indexes[1] == PartitionTimeIndex(None, 0, retained_since, None, None)
    # The lake read shard 0 from its expired record on: that record is lost, named by sequence.
    plan = plan_backfill(request, indexes, {0: puts[0]})
    assert plan.ranges == {0: OffsetRange(puts[1], puts[2])}
    assert plan.lost == (
        LostPart(0, puts[0], puts[1], T - 36 * HOUR, retained_since),
        LostPart(1, None, None, T - 36 * HOUR, retained_since),
    )
    assert plan.lost[0].to_json()["offsets"] == [puts[0], puts[1]]
    # The lake's first live range there began at the first retained record: nothing of it was lost.
    assert [part.partition for part in plan_backfill(request, indexes, {0: puts[1]}).lost] == [1]
    # A window after the retention horizon lost nothing, quiet shard included.
    recent = BackfillRequest("telemetry", T - 12 * HOUR, T - HOUR, ())
    assert plan_backfill(recent, _log(kinesis, clock).backfill_indexes(recent)).lost == ()


def test_a_young_stream_lost_nothing_whatever_its_shards_hold():
    first = LoggedRecord(49590338271490256608559692538361571095921575989136588905, T)
    assert kinesis_shard_index(first, first.offset + 10**21, None, None) == PartitionTimeIndex(
        0, first.offset + 10**21, None, first.offset, first.offset + 10**21
    )
    assert kinesis_shard_index(None, None, None, None) == PartitionTimeIndex(0, 0, None, None, None)


def test_a_recovery_range_below_the_trim_horizon_is_lost_naming_the_shard_and_the_rest_is_replayed(expiring):
    kinesis, clock, puts = expiring
    wanted = RecoveryRequest("telemetry", 0, (OffsetRange(puts[0], puts[2] + 1),), "RECONCILE: test")
    plan = _log(kinesis, clock).plan_recovery(wanted)
    assert [r for _, r, _ in plan.oldest_first] == [OffsetRange(puts[1], puts[2] + 1)]
    assert plan.lost == [OffsetRange(puts[0], puts[1])]
    assert plan.log_fields == {"shard_id": "shardId-000000000000", "first_retained_sequence": str(puts[1])}
    # Retained whole: nothing lost.
    kept = RecoveryRequest("telemetry", 0, (OffsetRange(puts[1], puts[2]),), "test")
    plan = _log(kinesis, clock).plan_recovery(kept)
    assert ([r for _, r, _ in plan.oldest_first], plan.lost) == ([OffsetRange(puts[1], puts[2])], [])
    # A shard quiet for longer than the retention retains nothing: the whole range expired.
    quiet = kinesis.shards["shardId-000000000001"].starting
    silent = RecoveryRequest("telemetry", 1, (OffsetRange(quiet + 5, quiet + 10**21),), "test")
    plan = _log(kinesis, clock).plan_recovery(silent)
    assert (plan.oldest_first, plan.lost) == ([], [OffsetRange(quiet + 5, quiet + 10**21)])
    assert plan.log_fields["first_retained_sequence"] is None
    gone = RecoveryRequest("telemetry", 7, (OffsetRange(puts[1], puts[2]),), "test")
    with pytest.raises(RecoveryRequestError, match=r"^param 'partition': Kinesis stream 'scooter-telemetry' lists no "):
        _log(kinesis, clock).plan_recovery(gone)


def test_recovery_requests_carry_56_digit_sequence_ranges_exactly_and_accept_any_shard_number(tmp_path):
    streams = _streams(tmp_path)
    start, end = (
        49590338271490256608559692538361571095921575989136588898,
        49590338271490256608559692538361571095921575989136599999,
    )
    form = {"stream": "telemetry", "partition": "12", "ranges": f"{start}-{end}", "reason": "lost rows"}
    request = parse_recovery_form(form, streams)
    assert (request.partition, request.ranges) == (12, (OffsetRange(start, end),)), "shard 12 of a 4-shard stream"
    assert RecoveryRequest.decode(request.encode()) == request
    assert check_recovery_request(request, streams) is request
    with pytest.raises(RecoveryRequestError, match=r"whole-number sequence numbers"):
        parse_recovery_form({**form, "ranges": "abc"}, streams)
    with pytest.raises(RecoveryRequestError, match=r"^param 'partition': partition -1 is not a shard's number"):
        parse_recovery_form({**form, "partition": -1}, streams)


def test_backfill_params_on_kinesis_name_shards_or_none(tmp_path):
    streams = _streams(tmp_path)
    params = {"stream": "telemetry", "start": "2026-11-22T00:00:00Z", "end": "2026-11-22T01:00:00Z"}
    assert parse_backfill_request(params, streams, now_ms=2**62).partitions == ()
    assert parse_backfill_request({**params, "partitions": "7,3"}, streams, now_ms=2**62).partitions == (3, 7)


def test_a_kafka_request_without_partitions_is_every_partition_of_the_topic(tmp_path):
    from harness.persist_job import write_stream_config

    streams = load_streams(write_stream_config(tmp_path, "127.0.0.1:9", "telemetry", 3))
    request = check_backfill_request(BackfillRequest("telemetry", 0, 1, ()), streams)
    assert request.partitions == (0, 1, 2)


def test_arrival_times_reach_kinesis_as_utc_datetimes(resharded):
    kinesis, clock, _ = resharded
    first_records_at(STREAM, "us-east-1", None, ["shardId-000000000004"], T + 1, client=kinesis, clock=clock)
    (call,) = [c for c in kinesis.calls if c[0] == "GetShardIterator"]
    assert call[2:] == ("AT_TIMESTAMP", dt.datetime(2026, 11, 22, 0, 0, 0, 1000, tzinfo=dt.UTC))


def test_lost_sequences_are_reported_by_shard_and_as_text(tmp_path):
    from spark_jobs.replay.recover import lost_report
    from tidemark.recovery_result import RecoveryResult

    stream = _streams(tmp_path)["telemetry"]
    start, end = (
        49590338271490256608559692538361571095921575989136588898,
        49590338271490256608559692538361571095921575989136599999,
    )
    result = RecoveryResult("telemetry", 3, "test", (), 0, 0, ((start, end),), (), "2026-11-22T00:00:00.000Z")
    report = lost_report(stream, 3, result)
    assert report["lost"] == [[str(start), str(end)]] and report["shard_id"] == "shardId-000000000003"
    assert report["detail"].startswith(
        f"sequence numbers [{start}, {end}) of Kinesis stream {STREAM!r}, shard shardId-000000000003 (partition 3) "
        "left the log"
    )
    assert "how many records they held is unknown" in report["detail"]
