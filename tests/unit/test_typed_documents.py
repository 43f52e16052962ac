"""The typed pass of Avro and Protobuf decoding (tidemark.typed_documents) against RecordDecoder, the rules' one home.

Its contract: it changes the cost of a record, never what becomes of it. Checked two ways on
generated and hostile records, a batch at a time: the whole decode stage gives the same rows and
the same counts with the typed pass and without it (every record through RecordDecoder), and the
typed pass alone decides exactly the records RecordDecoder accepts, with its event time and
values, type for type (so the fast path is taken by every valid record, and by nothing else).
"""

from __future__ import annotations

import io
import math
from datetime import UTC, datetime, timedelta, timezone

import pytest
from fastavro import parse_schema, schemaless_writer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_jobs.log_source.decode_stage import BatchDecoder, DecodeSpec
from spark_jobs.log_source.rows import arrow_schema
from tidemark.avro_documents import AvroDocuments
from tidemark.log_position import KAFKA_OFFSETS
from tidemark.planned_range import RECORD_ROW
from tidemark.protobuf_documents import ProtobufDocuments
from tidemark.protobuf_schemas import ProtobufSchema, file_descriptor
from tidemark.record_decoder import MAX_EVENT_TIME_MS, DecodedEvent, RecordDecoder, Rejection
from tidemark.stream_config import PayloadField, PayloadSchema
from tidemark.typed_documents import TypedDocuments
from tidemark.writer_schemas import RegistryUnavailableError, SchemaChangedError, UnknownSchemaError

NOW = 1_795_842_000_123  # 2026-11-28T05:00:00.123Z
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# A read time in the year 9999: the future guard lets every event time up to tidemark's last
# one through, so the bound itself is what refuses past it.
LAST_READ = MAX_EVENT_TIME_MS - 1_000
SKEW = 300_000
LATENESS = 600_000
FIELDS = (
    PayloadField("device_id", "string"),
    PayloadField("lat", "double"),
    PayloadField("battery", "int", required=False),
    PayloadField("serial", "long", required=False),
    PayloadField("on", "boolean", required=False),
    PayloadField("site", "string", path="place.site"),
    PayloadField("floor", "int", required=False, path="place.floor"),
)
NAMES = [field.name for field in FIELDS]


def _payload(kind: str, event_time_format: str = "epoch_millis", max_record_bytes: int = 4_096) -> PayloadSchema:
    return PayloadSchema(
        event_time_field="event_time",
        event_time_format=event_time_format,
        fields=FIELDS,
        max_record_bytes=max_record_bytes,
        format=kind,
        registry_url="http://registry:8081",
    )


# Avro: one writer schema per kind of event time; every other field takes any Avro type, so a
# generated record can hold what a producer with another schema would have written.
ANY = ["null", "boolean", "long", "double", "string", "bytes"]
PLACE = {"type": "record", "name": "Place", "fields": [{"name": "site", "type": ANY}, {"name": "floor", "type": ANY}]}
EVENT_TIMES = {
    1: ["null", {"type": "long", "logicalType": "timestamp-millis"}],
    2: ["null", {"type": "long", "logicalType": "timestamp-micros"}],
    3: ["null", {"type": "long", "logicalType": "local-timestamp-millis"}],  # naive: taken as UTC
    4: ["null", {"type": "long", "logicalType": "local-timestamp-micros"}],
    5: ["null", "long", "string", "double", "boolean"],  # whole milliseconds, text, or neither
}
AVRO = {
    schema_id: parse_schema(
        {
            "type": "record",
            "name": "Reading",
            "fields": [
                {"name": "event_time", "type": event_time},
                *({"name": name, "type": ANY} for name in ("device_id", "lat", "battery", "serial", "on")),
                {"name": "place", "type": ["null", "string", PLACE]},
            ],
        }
    )
    for schema_id, event_time in EVENT_TIMES.items()
}
READING_PROTO = """
syntax = "proto3";
package tidemark.typed;
import "google/protobuf/timestamp.proto";

message Place { optional string site = 1; optional int64 floor = 2; }
message Stamped {
  google.protobuf.Timestamp event_time = 1;
  optional string device_id = 2;
  optional double lat = 3;
  optional int64 battery = 4;
  optional uint64 serial = 5;
  optional bool on = 6;
  Place place = 7;
}
message Counted {
  optional int64 event_time = 1;
  optional string device_id = 2;
  optional double lat = 3;
  optional int64 battery = 4;
  optional int64 serial = 5;
  optional bool on = 6;
  Place place = 7;
}
message Written {
  optional string event_time = 1;
  optional string device_id = 2;
  optional double lat = 3;
  optional int32 battery = 4;
  optional int64 serial = 5;
  optional bool on = 6;
  Place place = 7;
}
message Mismatched {
  optional bool event_time = 1;
  optional bytes device_id = 2;
  optional string lat = 3;
  optional double battery = 4;
  optional string serial = 5;
  optional int32 on = 6;
  optional string place = 7;
}
"""
PROTOBUF = ProtobufSchema([file_descriptor("reading.proto", READING_PROTO)])
MESSAGES = {"Stamped": 1, "Counted": 2, "Written": 3, "Mismatched": 4}  # their indexes in the file


class Registry:
    """Writer schemas from memory: Avro ids 1..5, the Protobuf file as id 7. ``down`` makes it
    unavailable; ``unanswered`` counts the lookups it did not answer."""

    def __init__(self):
        self.down = False
        self.unanswered = 0

    def avro(self, schema_id):
        if self.down:
            self.unanswered += 1
            raise RegistryUnavailableError("the schema registry at http://registry:8081 did not answer")
        if schema_id not in AVRO:
            raise UnknownSchemaError(schema_id)
        return AVRO[schema_id]

    def protobuf(self, schema_id):
        if self.down:
            raise RegistryUnavailableError("the schema registry at http://registry:8081 did not answer")
        if schema_id != 7:
            raise UnknownSchemaError(schema_id)
        return PROTOBUF


def avro_body(schema_id: int, record: dict) -> bytes:
    body = io.BytesIO()
    schemaless_writer(body, AVRO[schema_id], record)
    return body.getvalue()


def avro_value(schema_id: int, record: dict) -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + avro_body(schema_id, record)


def protobuf_body(message: str, fields: dict) -> bytes:
    """``fields`` of ``message``, None left unset; ``event_time`` of Stamped a (seconds, nanos)
    pair, ``place`` a dict of Place's fields."""
    instance = PROTOBUF.message_class((MESSAGES[message],))()
    for name, value in fields.items():
        if value is None:
            continue
        if message == "Stamped" and name == "event_time":
            instance.event_time.seconds, instance.event_time.nanos = value
        elif name == "place" and isinstance(value, dict):
            instance.place.SetInParent()
            for inner, inner_value in value.items():
                if inner_value is not None:
                    setattr(instance.place, inner, inner_value)
        else:
            setattr(instance, name, value)
    return instance.SerializeToString()


def protobuf_indexes(message: str) -> bytes:
    return bytes([2, 2 * MESSAGES[message]])  # one index, zig-zag: the message's place in the file


def protobuf_value(message: str, fields: dict, schema_id: int = 7) -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + protobuf_indexes(message) + protobuf_body(message, fields)


def _batch(rows: list[dict]):
    """Raw record rows as the source yields them: one partition, steps 0 and 1 alternating."""
    import pyarrow as pa

    schema = arrow_schema(pa, KAFKA_OFFSETS)
    return pa.RecordBatch.from_pylist(
        [
            {
                "row_kind": RECORD_ROW,
                "source_partition": 0,
                "source_offset": offset,
                "record_headers": [{"key": k, "value": v} for k, v in row.get("headers") or ()] or None,
                "value": row["value"],
                "read_time_ms": row.get("read_time_ms", NOW),
                "step_id": offset % 2,
                "global_watermark_ms": NOW - 3_600_000,
            }
            for offset, row in enumerate(rows)
        ],
        schema=schema,
    )


def _agrees(payload: PayloadSchema, documents, rows: list[dict]) -> list[dict]:
    """Assert the typed pass changes nothing (see the module); returns the typed stage's rows."""
    spec = DecodeSpec(payload, SKEW, LATENESS)
    typed, plain = BatchDecoder(spec, documents), BatchDecoder(spec, documents)
    assert isinstance(typed._typed, TypedDocuments), "the stage takes the typed pass for this payload"
    plain._typed = None  # every record through RecordDecoder
    decoded = typed.decode(_batch(rows)).to_pylist()
    assert decoded == plain.decode(_batch(rows)).to_pylist()
    assert typed.step_counts() == plain.step_counts()

    values = [row["value"] for row in rows]
    read_times = [row.get("read_time_ms", NOW) for row in rows]
    headers = [row.get("headers") for row in rows]
    fast = TypedDocuments.of(payload, SKEW, documents).decode(values, read_times, headers)
    decoder = RecordDecoder(payload, SKEW, documents)
    for row, (value, read_time, pairs) in enumerate(zip(values, read_times, headers)):
        outcome = decoder.decode(value, read_time, pairs)
        if fast.event_times[row] is None:
            assert isinstance(outcome, Rejection), (row, outcome)
            continue
        assert isinstance(outcome, DecodedEvent), (row, outcome)
        assert fast.event_times[row] == outcome.event_time_ms
        fast_values = {name: fast.columns[i][row] for i, name in enumerate(NAMES)}
        assert fast_values == outcome.values
        for name in NAMES:  # 3 and 3.0 compare equal: the types must be the decoder's too
            assert type(fast_values[name]) is type(outcome.values[name]), (row, name)
    return decoded


def _outcomes(decoded: list[dict]) -> list:
    """Each row's reject reason, or its event time (ms) where it is valid."""
    return [row["reject_reason"] or row["event_time_ms"] for row in decoded]


# What a producer may put in a field, whatever the payload declares.
anything = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats()
    | st.text(max_size=6)
    | st.binary(max_size=4)
)
INT_EDGES = st.sampled_from([2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**63 - 1, -(2**63)])
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
READ_TIMES = st.sampled_from([NOW, LAST_READ])
# Event times the rules accept when read at NOW (late ones too: lateness is the stage's routing).
GOOD_MILLIS = st.integers(NOW - 7_200_000, NOW + SKEW)
ZONES = st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)), timezone(timedelta(hours=-8))])
GOOD_ISO = st.builds(
    lambda ms, zone: (EPOCH + timedelta(milliseconds=ms)).astimezone(zone).isoformat(), GOOD_MILLIS, ZONES
)
# Around now (some ahead of the future guard), before 1970, and up to past the year 9999.
MILLIS = (
    GOOD_MILLIS | st.integers(NOW, NOW + 2 * SKEW) | st.integers(-(10**12), 3 * 10**14) | st.just(MAX_EVENT_TIME_MS)
)
ISO_TEXT = (
    GOOD_ISO
    | st.datetimes(timezones=st.none() | ZONES).map(lambda moment: moment.isoformat())
    | st.sampled_from(["2026-11-28T05:00:00.123Z", "2026-11-28T05:00:00.0009995Z", "2026-11-28T05:00:00"])
    | st.text(max_size=12)
)
FRAMINGS = st.sampled_from(["prefix", "prefix", "prefix", "header", "cut", "unknown id"])


def _micros(millis):
    return st.builds(lambda ms, us: ms * 1000 + us, millis, st.integers(-999, 999))


# Per Avro writer schema, the event times of a valid record (by the payload's format) and of any.
AVRO_GOOD_TIMES = {
    1: lambda _: GOOD_MILLIS,
    2: lambda _: _micros(GOOD_MILLIS),
    3: lambda _: GOOD_MILLIS,
    4: lambda _: _micros(GOOD_MILLIS),
    5: lambda event_time_format: GOOD_MILLIS if event_time_format == "epoch_millis" else GOOD_ISO,
}
AVRO_TIMES = {
    1: st.none() | MILLIS,
    2: st.none() | _micros(MILLIS),
    3: st.none() | MILLIS,
    4: st.none() | _micros(MILLIS),
    5: st.none() | MILLIS | ISO_TEXT | st.floats() | st.booleans(),
}
# Per field, what a valid record holds (with what the rules convert: a long for a double, a
# whole double for an int), and what any record may hold.
AVRO_GOOD_FIELDS = {
    "device_id": st.text(max_size=8),
    "lat": st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**53), 2**53),
    "battery": st.none() | INT32 | st.integers(-(2**31), 2**31 - 1).map(float),
    "serial": st.none() | INT64,
    "on": st.none() | st.booleans(),
    "place": st.fixed_dictionaries({"site": st.text(max_size=5), "floor": st.none() | INT32}),
}
AVRO_FIELDS = {
    "device_id": st.text(max_size=8) | anything,
    "lat": st.floats() | INT64 | anything,
    "battery": INT32 | INT_EDGES | st.integers(-(2**40), 2**40).map(float) | anything,
    "serial": INT64 | INT_EDGES | anything,
    "on": st.booleans() | anything,
    "place": st.none()
    | st.text(max_size=3)
    | st.fixed_dictionaries({"site": st.text(max_size=5) | anything, "floor": st.integers(-(2**32), 2**32) | anything}),
}


@st.composite
def avro_rows(draw, event_time_format: str) -> dict:
    """A record as Avro producers write it: valid, or with any field of any type, framed by its
    prefix or a schema header, sometimes cut short or naming a schema no one registered; or
    bytes of no registry at all."""
    if draw(st.integers(0, 9)) == 0:
        return {"value": draw(st.none() | st.binary(max_size=12)), "read_time_ms": draw(READ_TIMES)}
    schema_id = draw(st.sampled_from(sorted(AVRO)))
    if draw(st.booleans()):
        times, fields = AVRO_GOOD_TIMES[schema_id](event_time_format), AVRO_GOOD_FIELDS
        framing = draw(st.sampled_from(["prefix", "header"]))
        row = {"read_time_ms": NOW}
    else:
        times, fields, framing = AVRO_TIMES[schema_id], AVRO_FIELDS, draw(FRAMINGS)
        row = {"read_time_ms": draw(READ_TIMES)}
    record = {"event_time": draw(times), **{name: draw(values) for name, values in fields.items()}}
    body = avro_body(schema_id, record)
    if framing == "header":
        return {**row, "value": body, "headers": [("__value_schema_id", b"\x00" + schema_id.to_bytes(4, "big"))]}
    value = b"\x00" + (99 if framing == "unknown id" else schema_id).to_bytes(4, "big") + body
    return {**row, "value": value[: draw(st.integers(0, len(value) - 1))] if framing == "cut" else value}


def _optional(values):
    return st.none() | values


GOOD_TIMESTAMPS = st.builds(
    lambda ms, nanos: (ms // 1000, ms % 1000 * 1_000_000 + nanos), GOOD_MILLIS, st.integers(0, 999_999)
)
GOOD_PLACES = st.fixed_dictionaries({"site": st.text(max_size=5), "floor": _optional(INT32)})
# Per message, its fields in a valid record and in any; a valid record is of a message whose
# event time the payload's format takes (a Timestamp, whatever the format).
PROTOBUF_GOOD_FIELDS = {
    "Stamped": {"event_time": GOOD_TIMESTAMPS, "serial": _optional(st.integers(0, 2**63 - 1))},
    "Counted": {"event_time": GOOD_MILLIS, "serial": _optional(INT64)},
    "Written": {"event_time": GOOD_ISO, "serial": _optional(INT64)},
}
for _fields in PROTOBUF_GOOD_FIELDS.values():
    _fields.update(
        device_id=st.text(max_size=8),
        lat=st.floats(allow_nan=False, allow_infinity=False),
        battery=_optional(INT32),
        on=_optional(st.booleans()),
        place=GOOD_PLACES,
    )
PROTOBUF_PLACES = _optional(
    st.fixed_dictionaries({"site": _optional(st.text(max_size=5)), "floor": _optional(st.integers(-(2**40), 2**40))})
)
PROTOBUF_FIELDS = {
    "Stamped": {
        "event_time": _optional(
            st.tuples(
                st.integers(NOW // 1000 - 7_200, NOW // 1000 + 700) | st.integers(-(10**11), 3 * 10**11),
                st.integers(0, 999_999_999) | INT32,
            )
        ),
        "device_id": _optional(st.text(max_size=8)),
        "lat": _optional(st.floats()),
        "battery": _optional(INT32 | INT_EDGES | INT64),
        "serial": _optional(st.integers(0, 2**64 - 1) | st.integers(2**63 - 2, 2**63 + 1)),
        "on": _optional(st.booleans()),
        "place": PROTOBUF_PLACES,
    },
    "Counted": {
        "event_time": _optional(MILLIS | INT64),
        "device_id": _optional(st.text(max_size=8)),
        "lat": _optional(st.floats()),
        "battery": _optional(INT_EDGES | INT64),
        "serial": _optional(INT64),
        "on": _optional(st.booleans()),
        "place": PROTOBUF_PLACES,
    },
    "Written": {
        "event_time": _optional(ISO_TEXT),
        "device_id": _optional(st.text(max_size=8)),
        "lat": _optional(st.floats()),
        "battery": _optional(INT32),
        "serial": _optional(INT64),
        "on": _optional(st.booleans()),
        "place": PROTOBUF_PLACES,
    },
    "Mismatched": {
        "event_time": _optional(st.booleans()),
        "device_id": _optional(st.binary(max_size=4)),
        "lat": _optional(st.text(max_size=4)),
        "battery": _optional(st.floats()),
        "serial": _optional(st.text(max_size=4)),
        "on": _optional(INT32),
        "place": _optional(st.text(max_size=4)),
    },
}


@st.composite
def protobuf_rows(draw, event_time_format: str) -> dict:
    """A record as Protobuf producers write it (see avro_rows), of one of four message types."""
    if draw(st.integers(0, 9)) == 0:
        return {"value": draw(st.none() | st.binary(max_size=12)), "read_time_ms": draw(READ_TIMES)}
    if draw(st.booleans()):
        message = draw(st.sampled_from(["Stamped", "Counted" if event_time_format == "epoch_millis" else "Written"]))
        fields, framing = PROTOBUF_GOOD_FIELDS[message], draw(st.sampled_from(["prefix", "header"]))
        row = {"read_time_ms": NOW}
    else:
        message = draw(st.sampled_from(sorted(PROTOBUF_FIELDS)))
        fields, framing = PROTOBUF_FIELDS[message], draw(FRAMINGS)
        row = {"read_time_ms": draw(READ_TIMES)}
    body = protobuf_body(message, {name: draw(values) for name, values in fields.items()})
    if framing == "header":
        header = b"\x00" + (7).to_bytes(4, "big") + protobuf_indexes(message)
        return {**row, "value": body, "headers": [("__value_schema_id", header)]}
    value = b"\x00" + (99 if framing == "unknown id" else 7).to_bytes(4, "big") + protobuf_indexes(message) + body
    return {**row, "value": value[: draw(st.integers(0, len(value) - 1))] if framing == "cut" else value}


FORMATS = st.sampled_from(["epoch_millis", "iso8601"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FORMATS.flatmap(lambda f: st.tuples(st.just(f), st.lists(avro_rows(f), min_size=1, max_size=12))))
def test_generated_avro_records_end_as_the_record_decoder_has_them_end(generated):
    event_time_format, rows = generated
    _agrees(_payload("avro", event_time_format), AvroDocuments(Registry()), rows)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FORMATS.flatmap(lambda f: st.tuples(st.just(f), st.lists(protobuf_rows(f), min_size=1, max_size=12))))
def test_generated_protobuf_records_end_as_the_record_decoder_has_them_end(generated):
    event_time_format, rows = generated
    _agrees(_payload("protobuf", event_time_format), ProtobufDocuments(Registry()), rows)


GOOD = {"device_id": "s-1", "lat": 52.5, "battery": 7, "serial": 2**40, "on": True, "place": {"site": "n", "floor": 3}}


def test_hostile_avro_records_end_as_the_record_decoder_has_them_end():
    def at(ms, schema_id=1, **fields):
        return {"value": avro_value(schema_id, {**GOOD, "event_time": ms, **fields})}

    header = [("__value_schema_id", b"\x00" + (1).to_bytes(4, "big"))]
    rows = [
        at(NOW),
        at(NOW, lat=math.nan),
        at(NOW, lat=math.inf),
        at(NOW, lat=-math.inf),
        at(NOW, lat=3),  # a long where a double is declared: 3.0
        at(NOW, battery=2**31 - 1),
        at(NOW, battery=2**31),  # past int32 for an int field
        at(NOW, battery=-(2**31)),
        at(NOW, battery=-(2**31) - 1),
        at(NOW, battery=87.0),  # a whole double where an int is declared: 87
        at(NOW, battery=87.5),
        at(NOW, serial=2**63 - 1),
        at(NOW, serial=float(2**63)),  # a whole double past a long
        at(NOW, on=1),  # a long is no boolean
        at(NOW, device_id=None),  # a required field null through the nullable union
        at(NOW, device_id=b"s-1"),
        at(NOW, place="north"),  # not a record: the site is missing
        at(NOW, place={"site": "n", "floor": None}),  # floor is not required
        at(None),
        at(NOW + SKEW),
        at(NOW + SKEW + 1),  # ahead of the future guard
        at(-1),  # before 1970
        at(-1, schema_id=2),  # -1 µs: floored to -1 ms, before 1970 (not truncated to 0)
        at(NOW * 1000 + 999, schema_id=2),  # microseconds below the millisecond are dropped
        at(NOW, schema_id=3),  # a local timestamp, naive: taken as UTC
        at(NOW * 1000 + 1, schema_id=4),
        at(NOW, schema_id=5),  # whole milliseconds in a long
        at(True, schema_id=5),  # a boolean is no number of milliseconds
        at(float(NOW), schema_id=5),
        at("2026-11-28T05:00:00.123Z", schema_id=5),  # text, where the payload says epoch_millis
        {**at(MAX_EVENT_TIME_MS, schema_id=5), "read_time_ms": LAST_READ},
        {**at(MAX_EVENT_TIME_MS + 1, schema_id=5), "read_time_ms": LAST_READ},  # past the year 9999
        {"value": b'{"event_time": 1795842000123, "device_id": "s-1"}'},  # JSON on the wrong topic
        {"value": b"\x00\x00\x00"},  # shorter than the prefix
        {"value": avro_value(1, {**GOOD, "event_time": NOW})[:-3]},  # the body cut short
        {"value": avro_value(1, {**GOOD, "event_time": NOW}) + b"\x00"},  # more than the schema reads
        {"value": b"\x00" + (99).to_bytes(4, "big") + avro_body(1, {**GOOD, "event_time": NOW})},
        {"value": avro_body(1, {**GOOD, "event_time": NOW}), "headers": header},  # the schema named in a header
        {
            "value": avro_body(1, {**GOOD, "event_time": NOW}),
            "headers": [("__value_schema_id", b"\x00\x00\x00\x00\x63")],
        },
        {"value": None},
        {"value": b""},
        {"value": b"\x00" + (1).to_bytes(4, "big") + b"\x02" * 5_000},  # past max_record_bytes
        at(NOW, device_id="x" * 5_000),  # a valid record, but past max_record_bytes
    ]

    decoded = _agrees(_payload("avro"), AvroDocuments(Registry()), rows)

    assert _outcomes(decoded) == [
        NOW,
        "wrong_type",
        "wrong_type",
        "wrong_type",
        NOW,
        NOW,
        "wrong_type",
        NOW,
        "wrong_type",
        NOW,
        "wrong_type",
        NOW,
        "wrong_type",
        "wrong_type",
        "missing_field",
        "wrong_type",
        "missing_field",
        NOW,
        "missing_event_time",
        NOW + SKEW,
        "future_event_time",
        "unparsable_event_time",
        "unparsable_event_time",
        NOW,
        NOW,
        NOW,
        NOW,
        "unparsable_event_time",
        "unparsable_event_time",
        "unparsable_event_time",
        MAX_EVENT_TIME_MS,
        "unparsable_event_time",
        "not_registry_framed",
        "truncated",
        "malformed_avro",
        "malformed_avro",
        "unknown_schema_id",
        NOW,
        "unknown_schema_id",
        "empty_value",
        "empty_value",
        "oversized",
        "oversized",
    ]
    assert [decoded[row][name] for row, name in ((4, "lat"), (9, "battery"), (17, "floor"))] == [3.0, 87, None]


def test_hostile_protobuf_records_end_as_the_record_decoder_has_them_end():
    seconds, millis = divmod(NOW, 1000)

    def stamped(at=(seconds, millis * 1_000_000), **fields):
        return {"value": protobuf_value("Stamped", {**GOOD, "event_time": at, **fields})}

    body = protobuf_body("Stamped", {**GOOD, "event_time": (seconds, millis * 1_000_000)})
    header = b"\x00" + (7).to_bytes(4, "big") + protobuf_indexes("Stamped")
    rows = [
        stamped(),
        stamped(lat=math.nan),
        stamped(lat=math.inf),
        stamped(battery=2**31),  # past int32 for an int field
        stamped(serial=2**63),  # a uint64 past a long
        stamped(serial=2**63 - 1),
        stamped(device_id=None),  # optional and unset: a required field missing
        stamped(place=None),  # no Place: its site is missing
        stamped(place={"site": "n", "floor": None}),
        stamped(at=None),
        stamped(at=(seconds, millis * 1_000_000 + 999_999)),  # sub-millisecond nanos: floored
        stamped(at=((NOW + SKEW) // 1000 + 1, 0)),  # ahead of the future guard
        stamped(at=(-1, 999_000_000)),  # 1969-12-31T23:59:59.999Z
        stamped(at=(0, -1_000)),  # a microsecond before 1970: floored to -1 ms
        stamped(at=(253_402_300_800, 0)),  # the year 10000: no datetime holds it
        {"value": protobuf_value("Counted", {**GOOD, "event_time": NOW})},
        {"value": protobuf_value("Written", {**GOOD, "event_time": "2026-11-28T05:00:00.123Z"})},
        {"value": protobuf_value("Mismatched", {"event_time": True, "device_id": b"x", "lat": "1"})},
        {"value": b"\x00" + (7).to_bytes(4, "big") + bytes([2, 2 * 9]) + body},  # indexes naming no message
        {"value": b"\x00" + (7).to_bytes(4, "big") + protobuf_indexes("Stamped") + body[:-2]},  # cut short
        {"value": b"\x00" + (7).to_bytes(4, "big") + b"\x00" + body},  # read as Place: fields it does not declare
        {"value": b"\x00" + (98).to_bytes(4, "big") + protobuf_indexes("Stamped") + body},
        {"value": b"\x7b\x00\x00"},
        {"value": body, "headers": [("__value_schema_id", header)]},  # the schema named in a header
        {"value": body, "headers": [("__value_schema_id", b"\x05")]},
        {"value": None},
        stamped(device_id="x" * 5_000),  # a valid record, but past max_record_bytes
    ]

    decoded = _agrees(_payload("protobuf"), ProtobufDocuments(Registry()), rows)

    assert _outcomes(decoded) == [
        NOW,
        "wrong_type",
        "wrong_type",
        "wrong_type",
        "wrong_type",
        NOW,
        "missing_field",
        "missing_field",
        NOW,
        "missing_event_time",
        NOW,
        "future_event_time",
        "unparsable_event_time",
        "unparsable_event_time",
        "undecodable",
        NOW,
        "unparsable_event_time",  # text, where the payload says epoch_millis
        "unparsable_event_time",
        "malformed_protobuf",
        "malformed_protobuf",
        "malformed_protobuf",
        "unknown_schema_id",
        "not_registry_framed",
        NOW,
        "not_registry_framed",
        "empty_value",
        "oversized",
    ]


def test_iso_text_event_times_are_parsed_as_the_record_decoder_parses_them():
    texts = [
        "2026-11-28T05:00:00.123Z",
        "2026-11-28T06:00:00.123+01:00",
        "2026-11-28T05:00:00.1239999Z",  # truncated to the millisecond, not rounded
        "2026-11-28T05:00:00.123",  # no offset
        "1969-12-31T23:59:59.999Z",
        "28/11/2026",
    ]
    rows = [{"value": protobuf_value("Written", {**GOOD, "event_time": text})} for text in texts]
    rows.append({"value": protobuf_value("Counted", {**GOOD, "event_time": NOW})})  # a number, where text is due

    decoded = _agrees(_payload("protobuf", "iso8601"), ProtobufDocuments(Registry()), rows)

    assert _outcomes(decoded) == [NOW, NOW, NOW, *["unparsable_event_time"] * 4]


def test_a_registry_that_does_not_answer_fails_the_batch_on_the_typed_pass_too():
    registry = Registry()
    stage = BatchDecoder(DecodeSpec(_payload("avro"), SKEW, LATENESS), AvroDocuments(registry))
    registry.down = True

    with pytest.raises(RegistryUnavailableError):
        stage.decode(_batch([{"value": avro_value(1, {**GOOD, "event_time": NOW})}] * 3))
    assert registry.unanswered == 1, "the first lookup unanswered fails the batch: no other record waits for one"
    # A value RecordDecoder refuses before its schema is looked up asks no registry here either.
    decoded = stage.decode(_batch([{"value": b""}, {"value": b"\x00" + (1).to_bytes(4, "big") + b"\x02" * 5_000}]))
    assert _outcomes(decoded.to_pylist()) == ["empty_value", "oversized"]


def test_a_writer_schema_with_a_field_the_job_has_no_column_for_fails_the_batch_on_the_typed_pass_too():
    newer = parse_schema(
        {
            "type": "record",
            "name": "Reading",
            "fields": [
                {"name": "event_time", "type": {"type": "long", "logicalType": "timestamp-millis"}},
                {"name": "device_id", "type": "string"},
                {"name": "firmware", "type": "string"},
            ],
        }
    )
    registry = type("Newer", (), {"avro": lambda self, schema_id: newer})()
    followed = frozenset(["event_time", "device_id"])  # the columns the running job has: no firmware
    stage = BatchDecoder(DecodeSpec(_payload("avro"), SKEW, LATENESS), AvroDocuments(registry, followed=followed))
    body = io.BytesIO()
    schemaless_writer(body, newer, {"event_time": NOW, "device_id": "s-1", "firmware": "1.2"})

    with pytest.raises(SchemaChangedError, match="firmware"):
        stage.decode(_batch([{"value": b"\x00\x00\x00\x00\x06" + body.getvalue()}]))


def test_payloads_the_typed_pass_does_not_serve_have_none():
    documents = AvroDocuments(Registry())
    keyed = PayloadSchema(
        event_time_field="event_time",
        fields=FIELDS,
        format="avro",
        registry_url="http://registry:8081",
        key_format="avro",
        key_fields=(PayloadField("tenant", "string"),),
    )
    assert TypedDocuments.of(keyed, SKEW, documents) is None, "a key field is RecordDecoder's to decode"
    assert TypedDocuments.of(PayloadSchema(event_time_field="event_time", fields=FIELDS), SKEW, documents) is None
    assert TypedDocuments.of(_payload("avro"), SKEW, None) is None
    assert isinstance(TypedDocuments.of(_payload("protobuf"), SKEW, documents), TypedDocuments)
