"""The rules by which a table's columns follow its registry schema (tidemark.schema_evolution):
new fields become nullable columns of their widest type, an existing column is never widened,
an incompatible change is refused naming the field and both versions; and a running decoder
fails its batch on a writer schema with a field it has no column for."""

from __future__ import annotations

import io

import msgspec
import pytest
from fastavro import parse_schema, schemaless_writer

from tidemark.avro_documents import AvroDocuments
from tidemark.record_decoder import RecordDecoder
from tidemark.schema_evolution import (
    SchemaEvolutionError,
    SchemaVersion,
    VersionField,
    avro_version_fields,
    followed_payload,
)
from tidemark.stream_config import PayloadField, PayloadSchema
from tidemark.writer_schemas import SchemaChangedError

PAYLOAD = PayloadSchema(
    event_time_field="event_time",
    fields=(PayloadField("device_id", "string"),),
    format="avro",
    registry_url="http://registry:8081",
    columns_from="follow_registry",
)


def version(number: int, **fields: str | None) -> SchemaVersion:
    return SchemaVersion(number, 10 + number, tuple(VersionField(name, kind) for name, kind in fields.items()))


def test_new_fields_become_nullable_columns_of_their_widest_type_and_removed_ones_stay():
    versions = [
        version(1, device_id="string", event_time=None, battery="int", place=None),
        version(2, device_id="string", battery="long", firmware="string"),
        version(3, device_id="string", firmware="string", temperature="double"),  # battery removed
    ]
    followed = followed_payload(PAYLOAD, versions, {})
    assert [(f.name, f.type, f.required) for f in followed.fields] == [
        ("device_id", "string", True),
        ("battery", "long", False),
        ("firmware", "string", False),
        ("temperature", "double", False),
    ]
    existing = {"device_id": "STRING", "battery": "BIGINT", "firmware": "STRING"}
    assert followed_payload(PAYLOAD, versions, existing) == followed, "the same columns once the table has them"


def test_an_existing_column_is_never_widened_and_an_incompatible_change_stops_naming_both_versions():
    widened = [version(1, battery="int"), version(2, battery="long")]
    with pytest.raises(
        SchemaEvolutionError,
        match=r"field 'battery' widens to long in schema version 2 \(id 12\) but its column is INT",
    ):
        followed_payload(PAYLOAD, widened, {"battery": "INT"})
    changed = [version(1, battery="int"), version(2, battery="long"), version(3, battery="string")]
    with pytest.raises(
        SchemaEvolutionError,
        match=r"^field 'battery' is long in schema version 2 \(id 12\) and string in version 3 \(id 13\): one cannot hold",
    ):
        followed_payload(PAYLOAD, changed, {})
    with pytest.raises(
        SchemaEvolutionError, match=r"field 'device_id' is declared string but schema version 1 \(id 11\) gives it long"
    ):
        followed_payload(PAYLOAD, [version(1, device_id="long")], {})
    declared_long = msgspec.structs.replace(PAYLOAD, fields=(PayloadField("battery", "long"),))
    narrower = followed_payload(declared_long, [version(1, battery="int")], {})
    assert [f.name for f in narrower.fields] == ["battery"], "a declared long holds a version's ints"


def test_avro_fields_map_to_column_types_and_others_are_not_followed():
    schema = {
        "type": "record",
        "name": "T",
        "fields": [
            {"name": "a", "type": "int"},
            {"name": "b", "type": ["null", "long"], "default": None},
            {"name": "c", "type": "float"},
            {"name": "d", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "e", "type": {"type": "record", "name": "P", "fields": []}},
            {"name": "f", "type": ["null", "string", "long"]},
            {"name": "g", "type": "boolean"},
        ],
    }
    assert [(f.name, f.type) for f in avro_version_fields(schema)] == [
        ("a", "int"),
        ("b", "long"),
        ("c", "double"),
        ("d", None),
        ("e", None),
        ("f", None),
        ("g", "boolean"),
    ]


def test_a_running_decoder_fails_its_batch_on_a_writer_schema_with_a_field_it_has_no_column_for():
    v2 = {
        "type": "record",
        "name": "T",
        "fields": [
            {"name": "device_id", "type": "string"},
            {"name": "event_time", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "firmware", "type": ["null", "string"], "default": None},
        ],
    }

    class Registry:
        def avro(self, schema_id):
            return parse_schema(v2)

    body = io.BytesIO()
    schemaless_writer(body, parse_schema(v2), {"device_id": "d", "event_time": 1_795_842_000_000, "firmware": "1"})
    value = b"\x00\x00\x00\x00\x07" + body.getvalue()
    running = RecordDecoder(
        PAYLOAD, 3_600_000, AvroDocuments(Registry(), followed=frozenset({"device_id", "event_time"}))
    )
    with pytest.raises(
        SchemaChangedError, match=r"writer schema 7 has field\(s\) 'firmware' that the running job has no column"
    ):
        running.decode(value, 1_795_842_000_000)
    restarted = frozenset({"device_id", "event_time", "firmware"})
    assert RecordDecoder(PAYLOAD, 3_600_000, AvroDocuments(Registry(), followed=restarted)).decode(
        value, 1_795_842_000_000
    )
