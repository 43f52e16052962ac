"""The driver's Kinesis log (connectors.kinesis_log) against an in-memory Kinesis with real-shaped,
56-digit, sparse sequence numbers: paging, read-ahead, iterators, idleness, throttling,
parent-first resharding, retention, and the errors a user can cause."""

from __future__ import annotations

import pytest

from connectors.kinesis_api import (
    KinesisCredentialsError,
    KinesisEndpointError,
    KinesisShardGoneError,
    KinesisStreamNotFoundError,
)
from connectors.kinesis_log import ITERATOR_LIFETIME_S, KinesisLog
from connectors.kinesis_shard_reads import read_range
from harness.fake_kinesis import BASE_SEQUENCE, FakeKinesis, SecondsClock
from tidemark.aligned_slices import LoggedRecord
from tidemark.retention_loss import LostRange

STREAM = "rides"
ENDPOINT = "http://127.0.0.1:4567"
NOW_S = 1_790_000_000.0
T0 = int(NOW_S * 1000) - 60_000  # arrivals a minute before the clock


@pytest.fixture
def clock():
    return SecondsClock(NOW_S)


@pytest.fixture
def kinesis(clock):
    return FakeKinesis(STREAM, clock, list_page_size=2)


def _log(kinesis, clock, **kwargs) -> KinesisLog:
    return KinesisLog(STREAM, "eu-west-1", ENDPOINT, client=kinesis, clock=clock, sleep=clock.sleep, **kwargs)


def _start(kinesis, number):
    return kinesis.shards[f"shardId-{number:012d}"].starting


def test_sequence_numbers_are_real_shaped(kinesis):
    kinesis.add_shard(0)
    first, second = kinesis.put(0, T0, T0 + 1)
    assert len(str(first)) == 56 and first > BASE_SEQUENCE
    assert second - first > 10**20  # sparse: never count by subtracting


def test_shards_are_listed_page_by_page_naming_the_stream_only_first(kinesis, clock):
    for number in range(5):
        kinesis.add_shard(number)
    shards = _log(kinesis, clock).shards()
    assert sorted(shards) == [0, 1, 2, 3, 4]
    assert shards[3].shard_id == "shardId-000000000003" and shards[3].starting_sequence == _start(kinesis, 3)
    listing_calls = [call for call in kinesis.calls if call[0] == "ListShards"]
    assert listing_calls == [("ListShards", STREAM, None), ("ListShards", None, "2"), ("ListShards", None, "4")]


def test_new_shards_are_picked_up_after_the_refresh_interval(kinesis, clock):
    kinesis.add_shard(0)
    log = _log(kinesis, clock)
    assert sorted(log.shards()) == [0]
    kinesis.split(0, 1)
    clock.now_s += 9
    assert sorted(log.shards()) == [0]
    clock.now_s += 1
    assert sorted(log.shards()) == [0, 1, 2]
    assert log.shards()[1].parents == (0,)


def test_fill_reads_ahead_until_a_record_reaches_the_target(kinesis, clock):
    kinesis.add_shard(0)
    seqs = kinesis.put(0, T0 + 1000, T0 + 2000, T0 + 3000, T0 + 4000)
    log = _log(kinesis, clock, max_records_per_call=1)
    log.fill({0: _start(kinesis, 0)}, target_ms=T0 + 2500, max_records=None)
    assert kinesis.get_records_calls() == 3  # stopped at the first record with arrival >= T
    assert log.offsets_for_time([0], T0 + 2500) == {0: seqs[2]}
    assert log.offsets_for_time([0], T0 + 3001) == {0: None}  # not read yet: unknown
    assert log.offset_for_time(0, T0) == seqs[0]
    assert log.next_records({0: seqs[0] + 1}) == {0: LoggedRecord(seqs[1], T0 + 2000)}
    assert log.next_record(0, seqs[2] + 1) is None
    assert log.last_record_times({0: seqs[2]}) == {0: T0 + 2000}
    assert log.last_record_time(0, seqs[0]) is None
    bounds = log.bounds()[0]
    assert (bounds.earliest, bounds.end, bounds.caught_up, bounds.finished) == (
        _start(kinesis, 0),
        seqs[2] + 1,
        False,
        False,
    )


def test_fill_without_target_reads_until_caught_up(kinesis, clock):
    kinesis.add_shard(0)
    seqs = kinesis.put(0, *(T0 + i for i in range(5)))
    log = _log(kinesis, clock, max_records_per_call=2)
    log.fill({0: _start(kinesis, 0)}, target_ms=None, max_records=None)
    bounds = log.bounds()[0]
    assert bounds.end == seqs[-1] + 1 and bounds.caught_up and bounds.millis_behind_latest == 0
    assert not bounds.finished  # open: quiet is not finished
    assert log.records_between(0, _start(kinesis, 0), bounds.end) == 5


def test_max_records_bounds_the_buffer(kinesis, clock):
    kinesis.add_shard(0)
    kinesis.put(0, *(T0 + i for i in range(10)))
    log = _log(kinesis, clock)
    log.fill({0: _start(kinesis, 0)}, target_ms=None, max_records=4)
    assert log.records_between(0, 0, log.bounds()[0].end) == 4
    assert [call[0] for call in kinesis.calls if call[0] == "GetRecords"] == ["GetRecords"]


def test_iterator_is_reused_across_fills_while_it_continues_at_the_position(kinesis, clock):
    kinesis.add_shard(0)
    seqs = kinesis.put(0, T0, T0 + 1, T0 + 2)
    log = _log(kinesis, clock)
    log.fill({0: _start(kinesis, 0)}, None, max_records=2)
    kinesis.put(0, T0 + 3)
    log.fill({0: seqs[1] + 1}, None, None)  # consumed the two records
    iterators = [call for call in kinesis.calls if call[0] == "GetShardIterator"]
    assert iterators == [("GetShardIterator", "shardId-000000000000", "TRIM_HORIZON", None)]
    assert log.take(0, seqs[1] + 1, log.bounds()[0].end) is not None
    assert [r.sequence for r in log.take(0, seqs[1] + 1, log.bounds()[0].end)] == [
        seqs[2],
        seqs[2] + 10**21 + 4_177 + 3,
    ]


def test_iterator_older_than_its_lifetime_is_replaced_after_the_last_record(kinesis, clock):
    kinesis.add_shard(0)
    seqs = kinesis.put(0, T0, T0 + 1)
    log = _log(kinesis, clock)
    log.fill({0: _start(kinesis, 0)}, None, None)
    clock.now_s += ITERATOR_LIFETIME_S + 1
    later = kinesis.put(0, T0 + 2)
    log.fill({0: seqs[-1] + 1}, None, None)
    asked = [call for call in kinesis.calls if call[0] == "GetShardIterator"][-1]
    assert asked == ("GetShardIterator", "shardId-000000000000", "AFTER_SEQUENCE_NUMBER", str(seqs[-1]))
    assert [r.sequence for r in log.take(0, seqs[-1] + 1, log.bounds()[0].end)] == later


def test_expired_iterator_is_replaced_never_an_error(kinesis, clock):
    kinesis.add_shard(0)
    seqs = kinesis.put(0, T0, T0 + 1)
    log = _log(kinesis, clock)
    log.fill({0: _start(kinesis, 0)}, None, max_records=1)
    kinesis.expire_next.add("shardId-000000000000")
    log.fill({0: seqs[0] + 1}, None, None)
    assert [r.sequence for r in log.take(0, seqs[0] + 1, log.bounds()[0].end)] == [seqs[1]]


def test_empty_page_behind_latest_is_followed_not_idle(kinesis, clock):
    kinesis.add_shard(0)
    seqs = kinesis.put(0, T0, T0 + 1)
    kinesis.behind_pages["shardId-000000000000"] = 3
    log = _log(kinesis, clock)
    log.fill({0: _start(kinesis, 0)}, None, None)
    bounds = log.bounds()[0]
    assert bounds.end == seqs[-1] + 1 and bounds.caught_up
    # Three empty pages behind, then the records: a page short of its limit at MillisBehindLatest 0
    # reaches the tip, so no empty page is asked for after it.
    assert kinesis.get_records_calls() == 4


def test_throttling_backs_off_and_is_counted_never_raised(kinesis, clock):
    kinesis.add_shard(0)
    seqs = kinesis.put(0, T0, T0 + 1)
    kinesis.throttle["shardId-000000000000"] = 2
    log = _log(kinesis, clock)
    log.fill({0: _start(kinesis, 0)}, None, None)
    assert log.throttled_calls == 2
    assert len(clock.slept) >= 2 and all(0 < s <= 5 for s in clock.slept)
    assert log.bounds()[0].end == seqs[-1] + 1


def test_a_shard_throttled_past_its_retries_is_left_for_the_next_fill(kinesis, clock):
    kinesis.add_shard(0)
    seqs = kinesis.put(0, T0)
    kinesis.throttle["shardId-000000000000"] = 100
    log = _log(kinesis, clock)
    log.fill({0: _start(kinesis, 0)}, None, None)
    assert log.throttled_calls == 5 and log.bounds()[0].end == _start(kinesis, 0)
    kinesis.throttle.clear()
    log.fill({0: _start(kinesis, 0)}, None, None)
    assert log.bounds()[0].end == seqs[0] + 1


def test_get_records_stays_within_the_per_shard_call_rate(kinesis, clock):
    kinesis.add_shard(0)
    kinesis.put(0, *(T0 + i for i in range(12)))
    log = _log(kinesis, clock, max_records_per_call=1)
    log.fill({0: _start(kinesis, 0)}, None, None)
    assert kinesis.get_records_calls() == 13
    # 13 calls at 5 a second: the first 5 at once, then each waits for the one five before it.
    assert sum(clock.slept) == pytest.approx(2.0)


def test_split_children_are_read_only_after_the_parent_is_consumed(kinesis, clock):
    kinesis.add_shard(0)
    parent = kinesis.put(0, T0, T0 + 10)
    kinesis.split(0, 1)
    child = kinesis.put(1, T0 + 20, T0 + 30)
    other = kinesis.put(2, T0 + 25)
    log = _log(kinesis, clock)
    positions = {p: _start(kinesis, p) for p in (0, 1, 2)}
    log.fill(positions, None, None)
    bounds = log.bounds()
    assert bounds[1].waiting_for == (0,) and bounds[2].waiting_for == (0,)
    assert bounds[1].end == positions[1] and bounds[2].end == positions[2]  # nothing readable
    # The first record is peeked: the planner can hold G at its time.
    assert log.next_records({1: positions[1], 2: positions[2]}) == {
        1: LoggedRecord(child[0], T0 + 20),
        2: LoggedRecord(other[0], T0 + 25),
    }
    assert log.take(1, positions[1], child[0] + 1) is None
    assert log.offsets_for_time([1], T0) == {1: None}
    assert [r.sequence for r in log.take(0, positions[0], bounds[0].end)] == parent
    assert not bounds[0].finished  # read to its end, but not consumed yet
    # The lake consumed the parent: the children become readable.
    log.fill({0: bounds[0].end, 1: positions[1], 2: positions[2]}, None, None)
    bounds = log.bounds()
    assert bounds[0].finished and bounds[1].waiting_for == () and bounds[2].waiting_for == ()
    assert [r.sequence for r in log.take(1, positions[1], bounds[1].end)] == child
    assert [r.sequence for r in log.take(2, positions[2], bounds[2].end)] == other


def test_merge_child_waits_for_both_parents(kinesis, clock):
    for number in (1, 2):
        kinesis.add_shard(number)
    first = kinesis.put(1, T0)
    second = kinesis.put(2, T0 + 5)
    kinesis.merge(1, 2, 3)
    merged = kinesis.put(3, T0 + 50)
    log = _log(kinesis, clock)
    positions = {p: _start(kinesis, p) for p in (1, 2, 3)}
    log.fill(positions, None, None)
    log.fill({1: first[0] + 1, 2: positions[2], 3: positions[3]}, None, None)
    assert log.bounds()[3].waiting_for == (2,) and log.bounds()[3].end == positions[3]
    log.fill({1: first[0] + 1, 2: second[0] + 1, 3: positions[3]}, None, None)
    assert log.bounds()[3].waiting_for == ()
    assert [r.sequence for r in log.take(3, positions[3], log.bounds()[3].end)] == merged


def test_a_parent_no_longer_listed_counts_as_finished(kinesis, clock):
    kinesis.add_shard(4)
    kinesis.split(4, 5)
    kinesis.remove(4)  # expired whole
    records = kinesis.put(5, T0)
    log = _log(kinesis, clock)
    log.fill({5: _start(kinesis, 5)}, None, None)
    assert log.bounds()[5].waiting_for == ()
    assert [r.sequence for r in log.take(5, _start(kinesis, 5), log.bounds()[5].end)] == records


def test_closed_shard_is_finished_when_caught_up_even_if_the_iterator_stays(kinesis, clock):
    kinesis.moto_style_closed = True
    kinesis.add_shard(0)
    records = kinesis.put(0, T0)
    kinesis.close(0)
    log = _log(kinesis, clock)
    log.fill({0: _start(kinesis, 0)}, None, None)
    assert not log.bounds()[0].finished
    log.fill({0: records[0] + 1}, None, None)
    assert log.bounds()[0].finished
    calls = kinesis.get_records_calls()
    log.fill({0: records[0] + 1}, None, None)
    assert kinesis.get_records_calls() == calls  # a finished shard is not read again


def test_counting_and_taking_use_records_not_arithmetic(kinesis, clock):
    kinesis.add_shard(0)
    seqs = kinesis.put(0, *(T0 + i for i in range(5)))
    log = _log(kinesis, clock)
    start = _start(kinesis, 0)
    log.fill({0: start}, None, None)
    end = log.bounds()[0].end
    assert log.records_between(0, start, end) == 5
    assert log.records_between(0, seqs[1], seqs[3]) == 2
    assert log.records_between(0, seqs[1] + 1, seqs[3] + 1) == 2
    assert log.position_after(0, start, 2) == seqs[1] + 1
    assert log.position_after(0, seqs[1] + 1, 1) == seqs[2] + 1
    assert log.position_after(0, start, 0) == start
    assert log.position_after(0, start, 99) == end
    taken = log.take(0, seqs[1], seqs[3])
    assert [(r.sequence, r.arrival_ms, r.data, r.partition_key) for r in taken] == [
        (seqs[1], T0 + 1, b"0:1", "key-0"),
        (seqs[2], T0 + 2, b"0:2", "key-0"),
    ]
    assert log.take(0, seqs[1], end + 1) is None  # past what was read
    log.fill({0: seqs[2]}, None, None)  # consumed two
    assert log.take(0, seqs[1], seqs[3]) is None  # dropped: read_range replays it
    assert log.last_record_times({0: seqs[2]}) == {0: T0 + 1}  # the last consumed record is remembered


def test_read_range_returns_exactly_the_range(kinesis, clock):
    kinesis.add_shard(0)
    seqs = kinesis.put(0, *(T0 + i for i in range(6)))
    kinesis.throttle["shardId-000000000000"] = 1
    got = list(
        read_range(
            STREAM,
            "eu-west-1",
            ENDPOINT,
            "shardId-000000000000",
            seqs[1],
            seqs[4],
            client=kinesis,
            clock=clock,
            sleep=clock.sleep,
        )
    )
    assert [r.sequence for r in got] == seqs[1:4]
    # From the shard's starting sequence: "after start - 1" is not a number of this shard, so AT it.
    got = list(
        read_range(
            STREAM,
            "eu-west-1",
            ENDPOINT,
            "shardId-000000000000",
            _start(kinesis, 0),
            seqs[2],
            client=kinesis,
            clock=clock,
            sleep=clock.sleep,
        )
    )
    assert [r.sequence for r in got] == seqs[:2]
    kinesis.expire_next.add("shardId-000000000000")
    got = list(
        read_range(
            STREAM,
            "eu-west-1",
            ENDPOINT,
            "shardId-000000000000",
            seqs[3] + 1,
            seqs[5] + 1,
            client=kinesis,
            clock=clock,
            sleep=clock.sleep,
        )
    )
    assert [r.sequence for r in got] == seqs[4:]


def test_stream_that_does_not_exist_names_stream_and_endpoint(kinesis, clock):
    log = KinesisLog("no-such-stream", "eu-west-1", ENDPOINT, client=kinesis, clock=clock, sleep=clock.sleep)
    with pytest.raises(KinesisStreamNotFoundError) as raised:
        log.shards()
    assert "'no-such-stream'" in str(raised.value) and ENDPOINT in str(raised.value)
    assert "conf/streams.yaml" in str(raised.value)


def test_endpoint_that_does_not_answer_names_it(kinesis, clock):
    kinesis.unreachable = True
    with pytest.raises(KinesisEndpointError) as raised:
        _log(kinesis, clock).shards()
    assert ENDPOINT in str(raised.value) and repr(STREAM) in str(raised.value)
    assert [call[0] for call in kinesis.calls] == ["ListShards", "ListShards"]  # retried once, not for ever


@pytest.mark.parametrize(
    "code",
    ["UnrecognizedClientException", "InvalidSignatureException", "ExpiredTokenException", "AccessDeniedException"],
)
def test_refused_credentials_name_stream_and_endpoint(kinesis, clock, code):
    kinesis.fail["ListShards"] = code
    with pytest.raises(KinesisCredentialsError) as raised:
        _log(kinesis, clock).shards()
    message = str(raised.value)
    assert code in message and repr(STREAM) in message and ENDPOINT in message
    assert "AWS connection" in message


def test_a_shard_that_disappears_mid_read_names_it(kinesis, clock):
    kinesis.add_shard(0)
    kinesis.add_shard(1)
    seqs = kinesis.put(1, T0)
    log = _log(kinesis, clock)
    log.fill({0: _start(kinesis, 0), 1: _start(kinesis, 1)}, None, max_records=1)
    kinesis.remove(1)
    with pytest.raises(KinesisShardGoneError) as raised:
        log.fill({0: _start(kinesis, 0), 1: seqs[0]}, None, None)
    assert "shardId-000000000001" in str(raised.value) and repr(STREAM) in str(raised.value)
    assert raised.value.shard_id == "shardId-000000000001"


def test_unknown_shard_id_shape_fails_naming_it(kinesis, clock):
    kinesis.add_shard(0)
    kinesis.shards["shard-abc"] = kinesis.shards.pop("shardId-000000000000")
    kinesis.shards["shard-abc"].shard_id = "shard-abc"
    with pytest.raises(ValueError, match="'shard-abc'"):
        _log(kinesis, clock).shards()


def _aged(kinesis, clock):
    """Shard 0 with records 30 hours old, then a recent one; retention (24 h) removed the old."""
    kinesis.add_shard(0)
    old = kinesis.put(0, T0 - 30 * 3_600_000, T0 - 29 * 3_600_000, T0 - 28 * 3_600_000)
    recent = kinesis.put(0, T0)
    kinesis.shards["shardId-000000000000"].trimmed = 3
    return old, recent


def test_range_expired_before_it_was_read_is_lost(kinesis, clock):
    old, recent = _aged(kinesis, clock)
    log = _log(kinesis, clock)
    lost = log.lost_at_positions({0: old[0] + 1}, last_read_ms={0: T0 - 30 * 3_600_000})
    assert lost == [LostRange(0, old[0] + 1, recent[0])]
    assert lost[0].to_json() == {"partition": 0, "start": str(old[0] + 1), "end": str(recent[0])}


def test_recent_reads_cannot_have_lost_anything_and_ask_nothing(kinesis, clock):
    kinesis.add_shard(0)
    seqs = kinesis.put(0, T0)
    log = _log(kinesis, clock)
    assert log.lost_at_positions({0: seqs[0] + 1}, last_read_ms={0: T0}) == []
    assert not [call for call in kinesis.calls if call[0] in ("GetShardIterator", "GetRecords")]


def test_never_read_shard_loses_only_what_the_lake_was_answerable_for(kinesis, clock):
    old, recent = _aged(kinesis, clock)
    log = _log(kinesis, clock)
    start = _start(kinesis, 0)
    assert log.lost_at_positions({0: start}) == []  # the lake starts at the trim horizon
    kinesis.created_s = NOW_S - 40 * 3_600
    log = _log(kinesis, clock)
    lost = log.lost_at_positions({0: start}, lake_began_ms=int(NOW_S * 1000) - 35 * 3_600_000)
    assert lost == [LostRange(0, start, recent[0])]


def test_expired_unlisted_shard_is_lost_only_if_the_lake_was_reading_it(kinesis, clock):
    kinesis.add_shard(1)
    log = _log(kinesis, clock)
    gone = 7
    assert log.lost_at_positions({gone: BASE_SEQUENCE}) == []
    assert log.lost_at_positions({gone: BASE_SEQUENCE}, last_read_ms={gone: T0 - 48 * 3_600_000}, finished={gone}) == []
    assert log.lost_at_positions({gone: BASE_SEQUENCE}, last_read_ms={gone: T0 - 48 * 3_600_000}) == [
        LostRange(gone, BASE_SEQUENCE, None)
    ]


def test_a_403_whose_body_botocore_could_not_parse_is_refused_credentials(kinesis, clock, monkeypatch):
    # botocore falls back to the HTTP status as the code and the raw body as the message (a proxy's
    # answer, or moto's XML to a JSON service).
    from botocore.exceptions import ClientError

    body = '<?xml version="1.0"?><ErrorResponse><Errors><Error><Code>InvalidClientTokenId</Code><Message>The security token included in the request is invalid.</Message></Error></Errors></ErrorResponse>'

    def refuse(**_):
        raise ClientError(
            {"Error": {"Code": "403", "Message": body}, "ResponseMetadata": {"HTTPStatusCode": 403}}, "ListShards"
        )

    monkeypatch.setattr(kinesis, "list_shards", refuse)
    with pytest.raises(KinesisCredentialsError) as raised:
        _log(kinesis, clock).shards()
    assert raised.value.code == "HTTP 403"
    assert str(raised.value).startswith(
        f"Kinesis refused the credentials (HTTP 403) on ListShards for stream {STREAM!r} at endpoint {ENDPOINT} "
        "(region eu-west-1): The security token included in the request is invalid.. Check the access key"
    )
