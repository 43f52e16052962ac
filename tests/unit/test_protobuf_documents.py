"""Protobuf values framed by a schema registry, through the record decoder: schemas compiled at
run time from their .proto text (or a serialized descriptor), nested messages reached by a field's
path, a Timestamp as the event time, and every broken record quarantined with its own reason."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import pytest

from tidemark.protobuf_documents import ProtobufDocuments
from tidemark.protobuf_schemas import ProtobufSchema, SchemaCompileError, file_descriptor
from tidemark.record_decoder import DecodedEvent, RecordDecoder, Rejection
from tidemark.registry_framing import Unframed, message_indexes
from tidemark.stream_config import PayloadField, PayloadSchema
from tidemark.writer_schemas import RegistryUnavailableError, UnknownSchemaError, UnusableSchemaError

READING = """
syntax = "proto3";
package plant.telemetry;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";

message Header { string trace_id = 1; }
message Reading {
  message Place { string site = 1; int32 floor = 2; }
  enum Quality { UNKNOWN = 0; GOOD = 1; SUSPECT = 2; }
  string device_id = 1;
  google.protobuf.Timestamp event_time = 2;
  int64 battery = 3;
  Place place = 4;
  Quality quality = 5;
  map<string, string> tags = 6;
  repeated double samples = 7;
  google.protobuf.DoubleValue temperature = 8;
  optional string firmware = 9;
}
"""
PAYLOAD = PayloadSchema(
    event_time_field="event_time",
    fields=(
        PayloadField("device_id", "string"),
        PayloadField("battery", "long"),
        PayloadField("site", "string", path="place.site"),
        PayloadField("floor", "int", required=False, path="place.floor"),
        PayloadField("quality", "string"),
        PayloadField("temperature", "double", required=False),
        PayloadField("firmware", "string", required=False),
    ),
    format="protobuf",
    registry_url="http://registry:8081",
)
AT = datetime(2026, 11, 28, 5, 0, 0, 123_456, tzinfo=UTC)
AT_MS = 1_795_842_000_123


class Schemas:
    """The registry as the decoder sees it: id 1 (Reading's file); ``down`` makes it unavailable."""

    def __init__(self, text: str = READING):
        self.down = False
        self.schema = ProtobufSchema([file_descriptor("reading.proto", text)])

    def protobuf(self, schema_id: int):
        if self.down:
            raise RegistryUnavailableError("the schema registry at http://registry:8081 did not answer")
        if schema_id == 3:
            raise UnusableSchemaError(3, "protoc: reading.proto:2:1: Expected top-level statement")
        if schema_id != 1:
            raise UnknownSchemaError(schema_id)
        return self.schema


def reading(schemas: Schemas, **fields):
    message = schemas.schema.message_class((1,))(**fields)
    message.event_time.FromDatetime(AT)
    return message


def framed(message, indexes: bytes = b"\x02\x02", schema_id: int = 1) -> bytes:
    """``indexes``: the zig-zag varints of the path; [1] (Reading, the file's second message) is 02 02."""
    return b"\x00" + schema_id.to_bytes(4, "big") + indexes + message.SerializeToString()


def _decoder(schemas: Schemas) -> RecordDecoder:
    return RecordDecoder(PAYLOAD, max_future_skew_ms=3_600_000, documents=ProtobufDocuments(schemas))


def test_a_message_decodes_with_nested_fields_by_path_a_timestamp_event_time_enums_and_wrappers():
    schemas = Schemas()
    message = reading(schemas, device_id="s-1", battery=2**40, quality=1, samples=[1.5, 2.5])
    message.place.site, message.place.floor = "north", 3
    message.tags["line"] = "7"
    message.temperature.value = 21.5
    assert _decoder(schemas).decode(framed(message), AT_MS) == DecodedEvent(
        AT_MS,
        {
            "device_id": "s-1",
            "battery": 2**40,
            "site": "north",
            "floor": 3,
            "quality": "GOOD",
            "temperature": 21.5,
            "firmware": None,
        },
    )
    document, refused = ProtobufDocuments(schemas)(framed(message))
    assert refused is None
    assert document["tags"] == {"line": "7"} and document["samples"] == [1.5, 2.5]
    assert document["event_time"] == AT.replace(microsecond=123_456)


def test_fields_with_presence_are_null_when_absent_and_a_required_one_is_missing():
    schemas = Schemas()
    no_place = reading(schemas, device_id="s-1", battery=1, firmware="2.0")
    result = _decoder(schemas).decode(framed(no_place), AT_MS)
    assert isinstance(result, Rejection) and result.reason == "missing_field" and "'place.site'" in result.detail
    no_place.place.site = "north"  # floor: a proto3 scalar without presence, 0 when unset
    result = _decoder(schemas).decode(framed(no_place), AT_MS)
    assert result.values["floor"] == 0 and result.values["temperature"] is None and result.values["firmware"] == "2.0"


def test_the_message_index_path_reaches_nested_messages_and_zero_alone_means_the_first():
    assert message_indexes(b"\x00rest") == ((0,), b"rest")
    assert message_indexes(b"\x04\x02\x00rest") == ((1, 0), b"rest")
    assert isinstance(message_indexes(b"\x04\x02"), Unframed)  # two announced, one given
    schemas = Schemas()
    place = schemas.schema.message_class((1, 0))(site="north")
    assert place.DESCRIPTOR.full_name == "plant.telemetry.Reading.Place"
    header = schemas.schema.message_class((0,))(trace_id="t")
    document, refused = ProtobufDocuments(schemas)(framed(header, indexes=b"\x00"))
    assert refused is None and document == {"trace_id": "t"}


def test_each_kind_of_broken_record_is_quarantined_with_its_own_reason():
    schemas = Schemas()
    good = framed(reading(schemas, device_id="s-1", battery=7))
    body = good[7:]
    cases = {
        "not_registry_framed": b'{"device_id": "s-1"}',
        "truncated": b"\x00\x00\x01",
        "unknown_schema_id": b"\x00\x00\x00\x00\x09\x02\x02" + body,
        "unusable_schema": b"\x00\x00\x00\x00\x03\x02\x02" + body,
        "malformed_protobuf": good[:-3],  # cut inside the Timestamp
    }
    for reason, value in cases.items():
        result = _decoder(schemas).decode(value, AT_MS)
        assert isinstance(result, Rejection) and result.reason == reason, (reason, result)
    no_message = _decoder(schemas).decode(b"\x00\x00\x00\x00\x01\x02\x08" + body, AT_MS)
    assert no_message.reason == "malformed_protobuf" and "name no message" in no_message.detail
    cut_indexes = _decoder(schemas).decode(b"\x00\x00\x00\x00\x01\x06\x02", AT_MS)
    assert cut_indexes.reason == "truncated"
    # A field of the wrong type: battery (3, a varint) written as text, as another schema would.
    wrong_type = _decoder(schemas).decode(good + b"\x1a\x02ab", AT_MS)
    assert wrong_type.reason == "malformed_protobuf" and "fields [3]" in wrong_type.detail, wrong_type
    unknown_field = framed(reading(schemas, device_id="s-1", battery=7)) + b"\xa8\x06\x01"  # field 101, varint 1
    result = _decoder(schemas).decode(unknown_field, AT_MS)
    assert result.reason == "malformed_protobuf" and "fields [101]" in result.detail


def test_a_registry_that_does_not_answer_fails_the_batch_and_quarantines_nothing():
    schemas = Schemas()
    schemas.down = True
    with pytest.raises(RegistryUnavailableError):
        _decoder(schemas).decode(framed(reading(Schemas(), device_id="s", battery=1)), AT_MS)


def test_a_serialized_descriptor_and_the_text_compile_to_the_same_file_and_bad_text_names_its_line():
    from_text = file_descriptor("reading.proto", READING)
    serialized = base64.b64encode(from_text.SerializeToString()).decode()
    assert file_descriptor("ignored.proto", serialized) == from_text
    with pytest.raises(SchemaCompileError, match=r"reading.proto:3:.*strin"):
        file_descriptor("reading.proto", 'syntax = "proto3";\n\nmessage X { strin a = 1; }\n')


def test_a_file_importing_another_compiles_against_it():
    place = file_descriptor(
        "common/place.proto", 'syntax = "proto3";\npackage common;\nmessage Place { string site = 1; }\n'
    )
    text = 'syntax = "proto3";\nimport "common/place.proto";\nmessage R { common.Place place = 1; }\n'
    schema = ProtobufSchema([place, file_descriptor("r.proto", text, [place])])
    message = schema.message_class((0,))()
    message.place.site = "north"
    assert ProtobufDocuments(type("S", (), {"protobuf": lambda self, i: schema})())(
        b"\x00\x00\x00\x00\x01\x00" + message.SerializeToString()
    ) == ({"place": {"site": "north"}}, None)


def test_a_schema_header_carries_the_guid_and_the_message_indexes_and_the_value_is_the_bare_message():
    class ByGuid(Schemas):
        def protobuf(self, schema_id):
            return super().protobuf(1 if schema_id == "5d1c9a3e-8f7b-4c2a-9e61-0b3f2a7c4d10" else schema_id)

    schemas = ByGuid()
    message = reading(schemas, device_id="s-1", battery=7)
    message.place.site = "north"
    guid = bytes.fromhex("5d1c9a3e8f7b4c2a9e610b3f2a7c4d10")
    header = [("__value_schema_id", b"\x01" + guid + b"\x02\x02")]  # indexes [1] in the header
    result = _decoder(schemas).decode(message.SerializeToString(), AT_MS, header)
    assert isinstance(result, DecodedEvent) and result.values["site"] == "north"
    extra = [("__value_schema_id", b"\x01" + guid + b"\x02\x02\x00")]
    assert _decoder(schemas).decode(message.SerializeToString(), AT_MS, extra).reason == "malformed_protobuf"
