"""The decoder's contract, for anything a producer can write: it never raises.

One record that made ``decode`` raise would fail its batch, and every restart would replay that
batch and fail again: no partition of the stream would be persisted any more. So every input is
either an event or a quarantine row with a reason.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidemark.record_decoder import DecodedEvent, RecordDecoder, RejectReason, Rejection
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
