"""The typed path of JSON decoding (tidemark.typed_json) against RecordDecoder, the rules' one home.

Its contract: a value it accepts is a valid record with exactly the event time and values
RecordDecoder gives it, and a value RecordDecoder refuses is never accepted. Checked on the
same generated and hostile input as the decoder's own properties, a batch at a time.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_record_decoder_properties import (
    DECODER,
    MAX_FUTURE_SKEW_MS,
    READ_TIME_MS,
    SCHEMA,
    json_values,
    record_like,
    valid_records,
)

from tidemark.record_decoder import DecodedEvent, RecordDecoder
from tidemark.stream_config import PayloadField, PayloadSchema
from tidemark.typed_json import TypedJson

TYPED = TypedJson.of(SCHEMA, MAX_FUTURE_SKEW_MS)
NAMES = [field.name for field in SCHEMA.columns]


def _agrees(values: list[bytes | None], typed=TYPED, decoder=DECODER, names=NAMES) -> int:
    """Assert the typed path agrees with ``decoder`` on every value; returns how many it accepted."""
    batch = typed.decode(values, [READ_TIME_MS] * len(values))
    accepted = 0
    for row, value in enumerate(values):
        event_time = batch.event_times[row]
        if event_time is None:
            continue
        accepted += 1
        outcome = decoder.decode(value, READ_TIME_MS)
        assert isinstance(outcome, DecodedEvent), (value, outcome)
        assert event_time == outcome.event_time_ms, value
        typed_values = {name: batch.columns[i][row] for i, name in enumerate(names)}
        assert typed_values == outcome.values, value
        for name in names:  # 3 and 3.0 compare equal: the types must be the decoder's too
            assert type(typed_values[name]) is type(outcome.values[name]), (value, name)
    return accepted


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(valid_records(), min_size=1, max_size=20))
def test_every_valid_record_the_typed_path_takes_decodes_as_the_record_decoder_decodes_it(records):
    values = [json.dumps(document).encode() for document, _, _ in records]
    # Every one of them takes the typed path, but those whose int field is written 87.0: the
    # decoder converts that, the typed path leaves it to the decoder.
    assert _agrees(values) == sum(not isinstance(document.get("battery"), float) for document, _, _ in records)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(record_like | json_values, max_size=10))
@example([{"event_time": "2026-11-22T08:59:59.999Z", "device_id": "a", "lat": 1, "lat2": 1}])
def test_no_document_is_accepted_that_the_record_decoder_refuses(documents):
    _agrees([json.dumps(document, allow_nan=True).encode() for document in documents])


# What msgspec would take and the rules would not, or the other way round: each must end as
# RecordDecoder says (accepted here only where it accepts them).
HOSTILE = [
    None,
    b"",
    b'{"event_time":"2026-11-10T10:00:00.123Z","device_id":"a","lat":1,"x":"\xff"}',  # bad UTF-8 in a skipped field
    b'{"event_time":"2026-11-10T10:00:00.123Z","device_id":"a","lat":1,"\xff":1}',
    b'{"event_time":"2026-11-10T10:00:00.123Z","device_id":"a","lat":1,"x":"\xed\xa0\x80"}',  # an encoded surrogate
    b'\xef\xbb\xbf{"event_time":"2026-11-10T10:00:00Z","device_id":"a","lat":1}',  # a byte-order mark
    b'{"event_time":"2026-11-10T10:00:00Z","device_id":"a","lat":1,"x":NaN}',
    b'{"event_time":"2026-11-10T10:00:00Z","device_id":"a","device_id":5,"lat":1}',  # a duplicate key, last wins
    b'{"event_time":"2026-11-10T10:00:00Z","device_id":5,"device_id":"a","lat":1}',
    b'{"event_time":"2026-11-10T10:00:00Z","device_id":"a","lat":1e999}',
    b'{"event_time":"2026-11-10T10:00:00Z","device_id":"a","lat":true}',
    b'{"event_time":"2026-11-10T10:00:00Z","device_id":"a","lat":1,"battery":3.0}',
    b'{"event_time":"2026-11-10T10:00:00Z","device_id":"a","lat":1,"battery":2147483648}',
    b'{"event_time":"2026-11-10T10:00:00Z","device_id":"a","lat":1,"serial":9223372036854775808}',
    b'{"event_time":"2026-11-10T10:00:00.5z","device_id":"a","lat":1}',  # msgspec's RFC 3339 takes it
    b'{"event_time":"2026-11-10T10:00:00.0009995Z","device_id":"a","lat":1}',  # truncated, not rounded
    b'{"event_time":"2026-11-10T10:00:00","device_id":"a","lat":1}',
    b'{"event_time":"2030-11-29T10:00:00Z","device_id":"a","lat":1}',  # ahead of the future guard
    b'{"event_time":"1969-12-31T23:59:59Z","device_id":"a","lat":1}',
    b'{"event_time":null,"device_id":"a","lat":1}',
    b'{"event_time":"2026-11-10T10:00:00Z","device_id":null,"lat":1}',
    b'{"event_time":"2026-11-10T10:00:00Z","lat":1}',
    b'{"event_time":"2026-11-10T10:00:00Z","device_id":"a","lat":1,"x":' + b"[" * 5000 + b"]" * 5000 + b"}",
    b'{"event_time":"2026-11-10T10:00:00Z","device_id":"a","lat":1} x',
    b' {"event_time":"2026-11-10T10:00:00Z","device_id":"a","lat":1}\n',
    b'[{"event_time":"2026-11-10T10:00:00Z","device_id":"a","lat":1}]',
    b"x" * 70_000,
]


def test_hostile_values_end_as_the_record_decoder_has_them_end():
    assert _agrees(HOSTILE) == 2  # the duplicate key whose last value is right, and the one with whitespace


def test_nested_paths_and_epoch_millis_decode_as_the_record_decoder_decodes_them():
    schema = PayloadSchema(
        event_time_field="at",
        event_time_format="epoch_millis",
        fields=(
            PayloadField("site", "string", True, path="place.site"),
            PayloadField("floor", "int", False, path="place.level.floor"),
            PayloadField("name", "string", False, path="na me"),
        ),
    )
    typed, decoder = TypedJson.of(schema, MAX_FUTURE_SKEW_MS), RecordDecoder(schema, MAX_FUTURE_SKEW_MS)
    values = [
        b'{"at":1795000000000,"place":{"site":"x","level":{"floor":3}},"na me":"n"}',
        b'{"at":1795000000000,"place":{"site":"x","level":null}}',
        b'{"at":1795000000000,"place":{"site":"x","level":4}}',  # not an object: the floor is missing
        b'{"at":true,"place":{"site":"x"}}',
        b'{"at":1795000000000.0,"place":{"site":"x"}}',
        b'{"at":1795000000000,"place":null}',
    ]
    assert _agrees(values, typed, decoder, ["site", "floor", "name"]) == 2


def test_payloads_the_typed_path_cannot_serve_have_none():
    fields = (PayloadField("place", "string"), PayloadField("site", "string", path="place.site"))
    assert TypedJson.of(PayloadSchema(event_time_field="t", fields=fields), 1) is None
    one = (PayloadField("v", "string"),)
    keyed = PayloadSchema(
        event_time_field="t", fields=one, key_format="json", key_fields=(PayloadField("k", "string"),)
    )
    assert TypedJson.of(keyed, 1) is None
    registry = PayloadSchema(event_time_field="t", fields=one, format="avro", registry_url="http://registry:8081")
    assert TypedJson.of(registry, 1) is None
