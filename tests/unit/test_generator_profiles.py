"""The generator's rate profiles, event streams and bad records: pure, no Kafka."""

from collections import Counter
from itertools import islice
from pathlib import Path

import pytest

from generator.bad_records import (
    BAD_RECORD_KINDS,
    FAR_FUTURE_EVENT_TIME,
    bad_record_value,
    bad_records_per_partition,
    partition_bad_records,
)
from generator.production_plan import ProductionPlan
from generator.profiles import HOUR_MS, PROFILES, partition_events, profile_named
from tidemark.event_time_text import format_event_time, parse_event_time
from tidemark.record_decoder import RecordDecoder, Rejection
from tidemark.stream_config import load_stream

# 2026-11-22T00:00:00Z, and a window start that is deliberately not on an hour boundary.
DAY_START_MS = 1_795_305_600_000
OFF_HOUR_START_MS = DAY_START_MS + 17 * 60_000 + 123
MAX_DISORDER_MS = 30_000


def events(name, start_ms=DAY_START_MS, hours=2, seed=7, partition=0, rate_scale=1.0, max_disorder_ms=MAX_DISORDER_MS):
    return list(
        partition_events(
            profile_named(name), partition, start_ms, start_ms + hours * HOUR_MS, seed, max_disorder_ms, rate_scale
        )
    )


@pytest.mark.parametrize("name, per_hour", [("steady", 720), ("slow", 1), ("heavy", 18_000), ("bursty", 1_800)])
def test_each_profile_produces_its_rate_per_hour(name, per_hour):
    assert len(events(name, hours=3)) == 3 * per_hour
    assert PROFILES[name].records_per_hour() == per_hour


@pytest.mark.parametrize("name", list(PROFILES))
def test_a_window_of_whole_hours_holds_the_same_count_wherever_it_starts(name):
    assert len(events(name, start_ms=OFF_HOUR_START_MS, hours=2)) == len(events(name, hours=2))


def test_slow_produces_exactly_one_record_in_each_event_time_hour():
    hours = Counter(event.event_time_ms // HOUR_MS for event in events("slow", hours=24))
    assert len(hours) == 24
    assert set(hours.values()) == {1}


def test_steady_records_are_evenly_spaced_five_seconds_apart():
    nominal = [event.nominal_time_ms for event in events("steady", hours=1)]
    assert {later - earlier for earlier, later in zip(nominal, nominal[1:])} == {5_000}


def test_bursty_packs_each_burst_into_one_minute_and_is_quiet_otherwise():
    minutes = Counter((event.nominal_time_ms - DAY_START_MS) // 60_000 for event in events("bursty", hours=1))
    assert minutes == {5: 600, 25: 600, 45: 600}


def test_rate_scale_multiplies_every_rate_except_slow():
    assert len(events("heavy", hours=1, rate_scale=0.5)) == 9_000
    assert len(events("steady", hours=1, rate_scale=2)) == 1_440
    assert len(events("bursty", hours=1, rate_scale=0.1)) == 180
    assert len(events("slow", hours=5, rate_scale=10)) == 5


def test_a_tiny_rate_scale_still_leaves_one_record_per_period():
    assert len(events("steady", hours=2, rate_scale=0.0001)) == 2


def test_the_same_seed_gives_the_same_events_and_another_seed_does_not():
    assert events("bursty", seed=3) == events("bursty", seed=3)
    assert events("bursty", seed=3) != events("bursty", seed=4)


def test_partitions_of_the_same_seed_differ_and_own_their_devices():
    first, second = events("steady", partition=0), events("steady", partition=1)
    assert [e.event_time_ms for e in first] != [e.event_time_ms for e in second]
    assert all(e.payload["device_id"].startswith("scooter-p1-") for e in second)


@pytest.mark.parametrize("name", list(PROFILES))
def test_no_event_is_more_than_max_disorder_behind_any_event_before_it(name):
    highest = None
    disorder = []
    for event in events(name, hours=3):
        if highest is not None:
            disorder.append(highest - event.event_time_ms)
        highest = event.event_time_ms if highest is None else max(highest, event.event_time_ms)
    assert max(disorder) <= MAX_DISORDER_MS
    if name != "slow":
        # Disorder really happens, not just permitted.
        assert max(disorder) > MAX_DISORDER_MS // 2


@pytest.mark.parametrize("name", list(PROFILES))
def test_event_times_stay_inside_the_window_minus_disorder(name):
    start, end = OFF_HOUR_START_MS, OFF_HOUR_START_MS + 2 * HOUR_MS
    for event in events(name, start_ms=start, hours=2):
        assert start <= event.nominal_time_ms < end
        assert event.nominal_time_ms - MAX_DISORDER_MS <= event.event_time_ms <= event.nominal_time_ms
        assert start - MAX_DISORDER_MS <= event.event_time_ms < end


def test_zero_disorder_makes_event_time_the_nominal_time():
    assert all(e.event_time_ms == e.nominal_time_ms for e in events("heavy", hours=1, max_disorder_ms=0))


def test_payloads_have_the_telemetry_shape():
    for event in events("heavy", hours=1):
        payload = event.payload
        assert set(payload) == {"device_id", "event_time", "lat", "lon", "battery"}
        assert payload["event_time"] == format_event_time(event.event_time_ms)
        assert parse_event_time(payload["event_time"]) == event.event_time_ms
        assert isinstance(payload["battery"], int) and 0 <= payload["battery"] <= 100
        assert isinstance(payload["lat"], float) and 52.2 < payload["lat"] < 52.5
        assert isinstance(payload["lon"], float) and 4.7 < payload["lon"] < 5.1


def test_event_time_text_is_iso8601_utc_with_milliseconds():
    assert format_event_time(DAY_START_MS + 9 * HOUR_MS - 1) == "2026-11-22T08:59:59.999Z"
    assert format_event_time(DAY_START_MS) == "2026-11-22T00:00:00.000Z"


def test_devices_wander_slowly():
    last_position = {}
    for event in events("heavy", hours=1):
        payload = event.payload
        previous = last_position.get(payload["device_id"])
        if previous:
            assert abs(payload["lat"] - previous[0]) < 0.001 and abs(payload["lon"] - previous[1]) < 0.001
        last_position[payload["device_id"]] = (payload["lat"], payload["lon"])


def test_a_huge_window_is_generated_lazily():
    # A year of heavy traffic is 158 million records; taking a few must not build them all.
    stream = partition_events(profile_named("heavy"), 0, DAY_START_MS, DAY_START_MS + 365 * 24 * HOUR_MS, 7, 30_000)
    assert len(list(islice(stream, 5))) == 5


def test_unknown_profile_names_the_known_ones():
    with pytest.raises(ValueError, match="steady, slow, heavy, bursty"):
        profile_named("fast")


# --- bad records -------------------------------------------------------------------------------


@pytest.fixture
def decoder(monkeypatch):
    monkeypatch.setenv("TIDEMARK_LAKE_ROOT", "/tmp/lake")
    monkeypatch.setenv("TIDEMARK_CHECKPOINT_ROOT", "/tmp/checkpoints")
    stream = load_stream(Path(__file__).resolve().parents[2] / "conf" / "streams.yaml", "telemetry")
    return RecordDecoder(stream.payload, stream.event_time.max_future_skew_ms)


EXPECTED_REJECTION = {
    "malformed_json": "malformed_json",
    "not_an_object": "not_an_object",
    "missing_event_time": "missing_event_time",
    "unparsable_event_time": "unparsable_event_time",
    "wrong_type": "wrong_type",
    "empty_value": "empty_value",
    "far_future_event_time": "future_event_time",
}


@pytest.mark.parametrize("kind", BAD_RECORD_KINDS)
def test_every_bad_record_kind_is_rejected_by_the_decoder(decoder, kind):
    nominal = DAY_START_MS + HOUR_MS
    result = decoder.decode(bad_record_value(kind, nominal, "scooter-p0-broken"), read_time_ms=nominal)
    assert isinstance(result, Rejection)
    assert result.reason == EXPECTED_REJECTION[kind]


def test_good_records_pass_the_same_decoder(decoder):
    import json

    for event in events("bursty", hours=1):
        decoded = decoder.decode(json.dumps(event.payload).encode(), read_time_ms=event.nominal_time_ms)
        assert not isinstance(decoded, Rejection), decoded
        assert decoded.event_time_ms == event.event_time_ms


def test_the_far_future_record_is_one_year_ahead_of_its_nominal_time():
    import json

    nominal = DAY_START_MS
    value = json.loads(bad_record_value(FAR_FUTURE_EVENT_TIME, nominal, "scooter-p0-broken"))
    assert parse_event_time(value["event_time"]) - nominal == 365 * 24 * HOUR_MS


def test_bad_records_are_spread_round_robin_and_cycle_through_every_kind():
    assert bad_records_per_partition(10, 4) == [3, 3, 2, 2]
    kinds = Counter(
        record.kind
        for partition in range(4)
        for record in partition_bad_records(partition, 4, 28, DAY_START_MS, DAY_START_MS + HOUR_MS)
    )
    assert kinds == {kind: 4 for kind in BAD_RECORD_KINDS}


def test_a_partitions_bad_records_are_spread_over_the_window_in_order():
    records = list(partition_bad_records(1, 4, 12, DAY_START_MS, DAY_START_MS + HOUR_MS))
    times = [record.nominal_time_ms for record in records]
    assert times == sorted(times) and len(times) == 3
    assert all(DAY_START_MS <= t < DAY_START_MS + HOUR_MS for t in times)
    assert [t - DAY_START_MS for t in times] == [600_000, 1_800_000, 3_000_000]
    assert all(record.partition == 1 and record.key == b"scooter-p1-broken" for record in records)


# --- the merged production order ---------------------------------------------------------------


def test_a_plan_merges_partitions_by_due_time_and_keeps_each_partition_in_order():
    plan = ProductionPlan(
        profiles=tuple(profile_named(name) for name in ("steady", "slow", "heavy", "bursty")),
        start_ms=DAY_START_MS,
        end_ms=DAY_START_MS + HOUR_MS,
        seed=7,
        max_disorder_ms=MAX_DISORDER_MS,
        bad_records=9,
    )
    records = list(plan.records())
    due = [record.nominal_time_ms for record in records]
    assert due == sorted(due)
    assert Counter(record.partition for record in records) == {0: 720 + 3, 1: 1 + 2, 2: 18_000 + 2, 3: 1_800 + 2}
    for partition in range(4):
        own = [
            r.event_time_ms
            for r in events(("steady", "slow", "heavy", "bursty")[partition], partition=partition, hours=1)
        ]
        assert [r.event_time_ms for r in records if r.partition == partition and hasattr(r, "event_time_ms")] == own
