"""The decoder's contract, for anything a producer can write: it never raises.

One record that made ``decode`` raise would fail its batch, and every restart would replay that
batch and fail again: no partition of the stream would be persisted any more. So every input is
either an event or a quarantine row with a reason.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.record_decoder import DecodedEvent, RecordDecoder, RejectReason, Rejection, parse_json
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
DECODER = RecordDecoder(SCHEMA, max_future_skew_ms=300_000)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=30,
)
# Objects that look like the stream's records, with any value in any field.
record_like = st.fixed_dictionaries(
    {},
    optional={
        "event_time": json_values | st.sampled_from(["2026-11-22T08:59:59.999Z", "2026-11-22T09:00:00+01:00", "9999-12-31T23:59:59Z"]),
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
    for value in (b'{"a": NaN}', b'{"a": 1e400}', b'{"a": "\\ud800"}', b'\xef\xbb\xbf{"a": 1}', '{"a": 1}'.encode("utf-16")):
        _same_as_the_standard_library(value)
    assert parse_json(b'{"a": 1e400}') == {"a": float("inf")}, "and the decoder then names the field's wrong type"
