"""Every kind of bad record gets a reason code and a readable detail; good records decode typed."""

import json

import pytest

from tidemark.record_decoder import DecodedEvent, RecordDecoder, Rejection, RejectReason
from tidemark.stream_config import PayloadField, PayloadSchema

SCHEMA = PayloadSchema(
    event_time_field="event_time",
    event_time_format="iso8601",
    fields=(
        PayloadField("device_id", "string", True),
        PayloadField("lat", "double", True),
        PayloadField("lon", "double", True),
        PayloadField("battery", "int", True),
        PayloadField("note", "string", False),
    ),
    max_record_bytes=512,
)
READ_TIME_MS = 1_763_802_000_000  # 2025-11-22T09:00:00Z
FIVE_MINUTES_MS = 300_000


def _decode(value, read_time_ms=READ_TIME_MS, schema=SCHEMA):
    return RecordDecoder(schema, FIVE_MINUTES_MS).decode(value, read_time_ms)


def _record(**overrides) -> bytes:
    document = {
        "device_id": "scooter-1",
        "event_time": "2025-11-22T08:59:59.999Z",
        "lat": 52.37,
        "lon": 4.89,
        "battery": 87,
    }
    document.update(overrides)
    return json.dumps({k: v for k, v in document.items() if v is not ...}).encode()


def test_valid_record_decodes_to_typed_values_and_epoch_millis():
    result = _decode(_record())
    assert result == DecodedEvent(
        READ_TIME_MS - 1, {"device_id": "scooter-1", "lat": 52.37, "lon": 4.89, "battery": 87, "note": None}
    )


def test_offsets_are_honoured_and_integers_widen_to_double():
    result = _decode(_record(event_time="2025-11-22T10:59:59.999+02:00", lat=52))
    assert result.event_time_ms == READ_TIME_MS - 1
    assert result.values["lat"] == 52.0 and isinstance(result.values["lat"], float)


@pytest.mark.parametrize(
    "value, reason, detail",
    [
        (b"", RejectReason.EMPTY_VALUE, "no value"),
        (None, RejectReason.EMPTY_VALUE, "a tombstone"),
        (b"x" * 513, RejectReason.OVERSIZED, "513 bytes, more than max_record_bytes 512"),
        (b'{"device_id": "s1", ', RejectReason.MALFORMED_JSON, "not valid JSON"),
        (b"\xff\xfe", RejectReason.MALFORMED_JSON, "not valid JSON"),
        (b"[1, 2]", RejectReason.NOT_AN_OBJECT, "got a JSON array"),
        (_record(event_time=...), RejectReason.MISSING_EVENT_TIME, "'event_time' is missing"),
        (_record(event_time=None), RejectReason.MISSING_EVENT_TIME, "'event_time' is missing"),
        (_record(event_time="yesterday"), RejectReason.UNPARSABLE_EVENT_TIME, 'got "yesterday"'),
        (_record(event_time="2025-11-22T08:00:00"), RejectReason.UNPARSABLE_EVENT_TIME, "with a UTC offset"),
        (_record(event_time=1763802000000), RejectReason.UNPARSABLE_EVENT_TIME, "ISO-8601"),
        (_record(battery="full"), RejectReason.WRONG_TYPE, "'battery' must be int, got string \"full\""),
        (_record(battery=87.5), RejectReason.WRONG_TYPE, "'battery' must be int"),
        (_record(battery=2**40), RejectReason.WRONG_TYPE, "'battery' must be int"),
        (_record(lat=True), RejectReason.WRONG_TYPE, "'lat' must be double, got boolean"),
        (_record(device_id=7), RejectReason.WRONG_TYPE, "'device_id' must be string, got number"),
        (_record(device_id=...), RejectReason.MISSING_FIELD, "'device_id' is missing"),
    ],
)
def test_bad_records_are_rejected_with_reason_and_detail(value, reason, detail):
    result = _decode(value)
    assert isinstance(result, Rejection)
    assert result.reason == reason
    assert detail in result.detail


def test_future_guard_rejects_only_beyond_max_future_skew():
    at_limit = _decode(_record(event_time="2025-11-22T09:05:00.000Z"))
    assert isinstance(at_limit, DecodedEvent)
    beyond = _decode(_record(event_time="2025-11-22T09:05:00.001Z"))
    assert beyond.reason == RejectReason.FUTURE_EVENT_TIME
    assert (
        "5m ahead" not in beyond.detail and "ahead of the time it was read (2025-11-22T09:00:00.000Z)" in beyond.detail
    )


def test_epoch_millis_format():
    schema = PayloadSchema("ts", "epoch_millis", (PayloadField("device_id", "string", True),), 512)
    assert _decode(b'{"ts": 1763801999999, "device_id": "a"}', schema=schema).event_time_ms == READ_TIME_MS - 1
    assert (
        _decode(b'{"ts": "1763801999999", "device_id": "a"}', schema=schema).reason
        == RejectReason.UNPARSABLE_EVENT_TIME
    )
    assert _decode(b'{"ts": -5, "device_id": "a"}', schema=schema).reason == RejectReason.UNPARSABLE_EVENT_TIME
