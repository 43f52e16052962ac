"""The decoder's contract, for anything a producer can write: it never raises.

One record that made ``decode`` raise would fail its batch, and every restart would replay that
batch and fail again: no partition of the stream would be persisted any more. So every input is
either an event or a quarantine row with a reason; and which of the two is no accident: a valid
record is an event with exactly its values, one broken field quarantines it for that field.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tidemark.record_decoder import DecodedEvent, RecordDecoder, Rejection, RejectReason, parse_json
from tidemark.stream_config import PayloadField, PayloadSchema

READ_TIME_MS = 1_795_000_000_000
SCHEMA = PayloadSchema(
    event_time_field="event_time",
    event_time_format="iso8601",
    fields=(
        PayloadField("device_id", "string", True),
        PayloadField("lat", "double", True),
        PayloadField("battery", "int", False),
        PayloadField("serial", "long", False),
        PayloadField("docked", "boolean", False),
    ),
    max_record_bytes=65_536,
)
MAX_FUTURE_SKEW_MS = 300_000
DECODER = RecordDecoder(SCHEMA, max_future_skew_ms=MAX_FUTURE_SKEW_MS)
AT_THE_FUTURE_GUARD_MS = READ_TIME_MS + MAX_FUTURE_SKEW_MS  # the latest event time still accepted

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=30,
)
# Objects that look like the stream's records, with any value in any field.
record_like = st.fixed_dictionaries(
    {},
    optional={
        "event_time": json_values
        | st.sampled_from(["2026-11-22T08:59:59.999Z", "2026-11-22T09:00:00+01:00", "9999-12-31T23:59:59Z"]),
        "device_id": json_values,
        "lat": json_values,
        "battery": json_values | st.integers(min_value=-(2**70), max_value=2**70),
        "serial": json_values,
        "docked": json_values,
    },
)


def _decodes_to_one_outcome(value: bytes | None) -> None:
    outcome = DECODER.decode(value, READ_TIME_MS)
    assert isinstance(outcome, (DecodedEvent, Rejection))
    if isinstance(outcome, Rejection):
        assert outcome.reason in vars(RejectReason).values() and outcome.detail


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2_000))
def test_arbitrary_bytes_never_raise(value):
    _decodes_to_one_outcome(value)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_arbitrary_json_never_raises(document):
    _decodes_to_one_outcome(json.dumps(document, allow_nan=True).encode())


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(record_like)
def test_record_shaped_json_with_any_field_values_never_raises(document):
    _decodes_to_one_outcome(json.dumps(document, allow_nan=True).encode())


ABSENT = object()  # the field is left out of the record
EPOCH = datetime(1970, 1, 1)
YEAR_1000_MS = (datetime(1000, 1, 1) - EPOCH) // timedelta(milliseconds=1)
YEAR_9999_MS = (datetime(9999, 1, 1) - EPOCH) // timedelta(milliseconds=1)
JSON_KIND = {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object"}
utc_offsets_min = st.sampled_from([None, 0, 60, -300, 330, 840, -720])  # None: written "Z"


def iso8601(event_time_ms: int, offset_min: int | None) -> str:
    """The event time as a producer writes it: local time at its UTC offset, to the millisecond."""
    local = EPOCH + timedelta(milliseconds=event_time_ms + (offset_min or 0) * 60_000)
    if offset_min is None:
        return local.isoformat(timespec="milliseconds") + "Z"
    sign = "+" if offset_min >= 0 else "-"
    return local.isoformat(timespec="milliseconds") + f"{sign}{abs(offset_min) // 60:02d}:{abs(offset_min) % 60:02d}"


def optional(values):
    """An optional field's (written, decoded) pairs: left out and null both decode to None."""
    return st.sampled_from([(ABSENT, None), (None, None)]) | values


# Per field, what a valid record may hold there and the value it must decode to.
valid_fields = {
    "device_id": st.text(max_size=30).map(lambda text: (text, text)),
    # An integer is a valid double and widens to one (within 2^53 every one is exact).
    "lat": (st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**53), 2**53)).map(
        lambda x: (x, float(x))
    ),
    # 87.0 is the int 87.
    "battery": optional(st.integers(-(2**31), 2**31 - 1).flatmap(lambda n: st.sampled_from([(n, n), (float(n), n)]))),
    "serial": optional(st.integers(-(2**63), 2**63 - 1).map(lambda n: (n, n))),
    "docked": optional(st.booleans().map(lambda b: (b, b))),
}
not_in_the_schema = st.text(max_size=8).filter(lambda name: name != "event_time" and name not in valid_fields)


@st.composite
def valid_records(draw):
    """(a valid record's document, its event time in ms, its decoded values by field)."""
    event_time_ms = draw(st.integers(0, AT_THE_FUTURE_GUARD_MS))
    document = {"event_time": iso8601(event_time_ms, draw(utc_offsets_min))}
    values = {}
    for name, pairs in valid_fields.items():
        written, decoded = draw(pairs)
        if written is not ABSENT:
            document[name] = written
        values[name] = decoded
    # Fields the schema does not name are not the stream's: they are dropped, never an error.
    document.update(draw(st.dictionaries(not_in_the_schema, st.integers() | st.text(max_size=5), max_size=3)))
    return document, event_time_ms, values


# Every bound a valid record may touch, from below and from above: the checks are inclusive.
LOWEST_VALUES = {"device_id": "", "lat": -(2.0**53), "battery": -(2**31), "serial": -(2**63), "docked": False}
HIGHEST_VALUES = {"device_id": "scooter-1", "lat": 2.0**53, "battery": 2**31 - 1, "serial": 2**63 - 1, "docked": True}
LOWEST = ({"event_time": "1970-01-01T00:00:00.000Z", **LOWEST_VALUES}, 0, LOWEST_VALUES)
HIGHEST = (
    {"event_time": iso8601(AT_THE_FUTURE_GUARD_MS, None), **HIGHEST_VALUES},
    AT_THE_FUTURE_GUARD_MS,
    HIGHEST_VALUES,
)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(valid_records())
@example(LOWEST)
@example(HIGHEST)
def test_a_valid_record_decodes_to_its_event_time_and_exactly_its_fields_values(record):
    document, event_time_ms, values = record
    outcome = DECODER.decode(json.dumps(document).encode(), READ_TIME_MS)
    assert outcome == DecodedEvent(event_time_ms, values)
    # == takes 1 for 1.0 and True: the types are the schema's.
    assert [type(v) for v in outcome.values.values()] == [type(v) for v in values.values()]


def missing(name):
    return st.sampled_from([ABSENT, None]).map(
        lambda raw: (name, raw, RejectReason.MISSING_FIELD, f"required field {name!r} is missing or null")
    )


def wrong_type(name, schema_type, values):
    def damage(raw):
        return name, raw, RejectReason.WRONG_TYPE, f"field {name!r} must be {schema_type}, got {JSON_KIND[type(raw)]} "

    return values.map(damage)


def unparsable_event_time(values):
    detail = "'event_time' must be an ISO-8601 time with a UTC offset, e.g. 2026-11-22T08:59:59.999Z; got "
    return values.map(lambda raw: ("event_time", raw, RejectReason.UNPARSABLE_EVENT_TIME, detail))


numbers = st.integers() | st.floats()
arrays_and_objects = st.lists(st.integers(), max_size=3) | st.dictionaries(
    st.text(max_size=4), st.integers(), max_size=2
)
not_whole = st.floats().filter(lambda x: not x.is_integer())  # also NaN and the infinities
# One case per field and kind of damage, so that every case is tried on every run: (field,
# value written, or ABSENT, reason, how the detail starts).
ONE_FIELD_BROKEN = {
    "event_time missing": st.sampled_from([ABSENT, None]).map(
        lambda raw: (
            "event_time",
            raw,
            RejectReason.MISSING_EVENT_TIME,
            "the event-time field 'event_time' is missing or null",
        )
    ),
    "event_time a number": unparsable_event_time(numbers),  # epoch millis, say: not this stream's format
    "event_time not text": unparsable_event_time(st.booleans() | arrays_and_objects),
    # Without an offset it is somebody's local time, not an instant.
    "event_time without offset": unparsable_event_time(
        st.integers(0, READ_TIME_MS).map(lambda ms: iso8601(ms, None)[:-1])
    ),
    "event_time not a time": unparsable_event_time(
        st.sampled_from(["", "yesterday", "2026-11-22", "2026-02-30T00:00:00Z", "22/11/2026 09:00 UTC"])
    ),
    "event_time before 1970": st.tuples(st.integers(YEAR_1000_MS, -1), utc_offsets_min).map(
        lambda t: (
            "event_time",
            iso8601(*t),
            RejectReason.UNPARSABLE_EVENT_TIME,
            f"'event_time' {t[0]} is outside years 1970..9999",
        )
    ),
    "event_time past the future guard": st.tuples(
        st.integers(AT_THE_FUTURE_GUARD_MS + 1, YEAR_9999_MS), utc_offsets_min
    ).map(
        lambda t: ("event_time", iso8601(*t), RejectReason.FUTURE_EVENT_TIME, f"event time {iso8601(t[0], None)} is ")
    ),
    "device_id missing": missing("device_id"),
    "device_id a number": wrong_type("device_id", "string", numbers),
    "device_id a boolean": wrong_type("device_id", "string", st.booleans()),
    "device_id an array or object": wrong_type("device_id", "string", arrays_and_objects),
    "lat missing": missing("lat"),
    "lat text": wrong_type("lat", "double", st.text(max_size=12)),
    "lat a boolean": wrong_type("lat", "double", st.booleans()),
    "lat an array or object": wrong_type("lat", "double", arrays_and_objects),
    "lat not finite": wrong_type("lat", "double", st.sampled_from([math.nan, math.inf, -math.inf])),
    "lat an integer past the double range": wrong_type(
        "lat", "double", st.integers(10**309, 10**400) | st.integers(-(10**400), -(10**309))
    ),
    "battery text": wrong_type("battery", "int", st.text(max_size=12)),
    "battery a boolean": wrong_type("battery", "int", st.booleans()),
    "battery an array or object": wrong_type("battery", "int", arrays_and_objects),
    "battery not whole": wrong_type("battery", "int", not_whole),
    **{
        f"battery {raw!r}, one past an int": wrong_type("battery", "int", st.just(raw))
        for raw in (2**31, -(2**31) - 1, 2.0**31, -(2.0**31) - 1)
    },
    "battery far past an int": wrong_type(
        "battery", "int", st.integers(2**31, 2**80) | st.integers(-(2**80), -(2**31) - 1)
    ),
    "serial text": wrong_type("serial", "long", st.text(max_size=12)),
    "serial a boolean": wrong_type("serial", "long", st.booleans()),
    "serial not whole": wrong_type("serial", "long", not_whole),
    **{
        f"serial {raw!r}, one past a long": wrong_type("serial", "long", st.just(raw))
        for raw in (2**63, -(2**63) - 1, 2.0**63)
    },
    "serial far past a long": wrong_type(
        "serial", "long", st.integers(2**63, 2**80) | st.integers(-(2**80), -(2**63) - 1)
    ),
    "docked a number": wrong_type("docked", "boolean", numbers),
    "docked text": wrong_type("docked", "boolean", st.text(max_size=12)),
    "docked an array or object": wrong_type("docked", "boolean", arrays_and_objects),
}


@pytest.mark.parametrize("damage", ONE_FIELD_BROKEN, ids=str)
@settings(max_examples=10, suppress_health_check=[HealthCheck.too_slow])
@given(record=valid_records(), data=st.data())
def test_a_valid_record_with_one_field_broken_is_quarantined_for_that_field(damage, record, data):
    name, raw, reason, detail = data.draw(ONE_FIELD_BROKEN[damage])
    document = {k: v for k, v in record[0].items() if k != name} | ({} if raw is ABSENT else {name: raw})
    outcome = DECODER.decode(json.dumps(document, allow_nan=True).encode(), READ_TIME_MS)
    assert isinstance(outcome, Rejection) and outcome.reason == reason, outcome
    assert outcome.detail.startswith(detail), outcome.detail


@given(st.integers(min_value=5_000, max_value=10_000), st.sampled_from([(b'{"a":', b"}"), (b"[", b"]")]))
def test_deep_nesting_is_quarantined_with_its_own_reason(depth, brackets):
    """Thousands of levels, still under max_record_bytes (beyond it the record is oversized)."""
    opening, closing = brackets
    value = opening * depth + b"1" + closing * depth
    outcome = DECODER.decode(value, READ_TIME_MS)
    assert outcome == Rejection(RejectReason.TOO_DEEPLY_NESTED, outcome.detail)


def _same_as_the_standard_library(value: bytes) -> None:
    """parse_json's document, or its error, is json.loads's: type for type, value for value."""
    try:
        expected = ("document", json.loads(value))
    except Exception as error:  # noqa: BLE001 - the error is what is compared
        expected = ("error", type(error), str(error))
    try:
        found = ("document", parse_json(value))
    except Exception as error:  # noqa: BLE001
        found = ("error", type(error), str(error))
    # repr tells 1 from 1.0 and True, and -0.0 from 0.0; NaN never equals itself, its repr does.
    assert repr(found) == repr(expected), value


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(json_values | record_like)
def test_the_fast_json_parser_decodes_every_document_as_the_standard_library_does(document):
    _same_as_the_standard_library(json.dumps(document, allow_nan=True).encode())
    _same_as_the_standard_library(json.dumps(document, allow_nan=True, ensure_ascii=False).encode())


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300) | st.from_regex(rb"\A[\s{}\[\]\":,0-9eE.+\-a-z\\u]{0,80}\Z"))
def test_the_fast_json_parser_refuses_or_decodes_hostile_bytes_as_the_standard_library_does(value):
    _same_as_the_standard_library(value)


def test_what_only_the_standard_library_accepts_is_still_decoded_by_it():
    for value in (
        b'{"a": NaN}',
        b'{"a": 1e400}',
        b'{"a": "\\ud800"}',
        b'\xef\xbb\xbf{"a": 1}',
        '{"a": 1}'.encode("utf-16"),
    ):
        _same_as_the_standard_library(value)
    assert parse_json(b'{"a": 1e400}') == {"a": float("inf")}, "and the decoder then names the field's wrong type"
