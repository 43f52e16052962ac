"""Avro values framed by a schema registry, through the record decoder: every record an event or a
quarantine row with its own reason; a registry that does not answer fails the batch instead."""

from __future__ import annotations

import io
import json
import uuid
from datetime import UTC, datetime

import pytest
from fastavro import parse_schema, schemaless_writer

from harness.avro_schemas import V1, V2
from tidemark.avro_documents import AvroDocuments
from tidemark.record_decoder import DecodedEvent, RecordDecoder, Rejection
from tidemark.stream_config import PayloadField, PayloadSchema
from tidemark.writer_schemas import RegistryUnavailableError, UnknownSchemaError

PAYLOAD = PayloadSchema(
    event_time_field="event_time",
    fields=(PayloadField("device_id", "string"), PayloadField("battery", "long")),
    format="avro",
    registry_url="http://registry:8081",
)
AT = datetime(2026, 11, 28, 5, 0, 0, 123_000, tzinfo=UTC)
AT_MS = 1_795_842_000_123


V2_GUID = uuid.UUID("5d1c9a3e-8f7b-4c2a-9e61-0b3f2a7c4d10")
GUIDS = {str(V2_GUID): 2}


class Schemas:
    """The registry as the decoder sees it: ids 1 and 2; ``down`` makes it unavailable."""

    def __init__(self):
        self.down = False
        self.asked: list[int] = []

    def avro(self, schema_id: int):
        self.asked.append(schema_id)
        if self.down:
            raise RegistryUnavailableError("the schema registry at http://registry:8081 did not answer")
        schema_id = GUIDS.get(schema_id, schema_id)  # a schema header may name it by GUID
        if schema_id not in (1, 2):
            raise UnknownSchemaError(schema_id)
        return parse_schema(V1 if schema_id == 1 else V2)


def framed(schema_id: int, record: dict, schema: dict) -> bytes:
    body = io.BytesIO()
    schemaless_writer(body, parse_schema(schema), record)
    return b"\x00" + schema_id.to_bytes(4, "big") + body.getvalue()


def _decoder(schemas: Schemas) -> RecordDecoder:
    return RecordDecoder(PAYLOAD, max_future_skew_ms=3_600_000, documents=AvroDocuments(schemas))


def test_records_of_both_writer_versions_decode_to_the_declared_fields_with_the_timestamp_as_event_time():
    decoder = _decoder(Schemas())
    v1 = decoder.decode(framed(1, {"device_id": "s-1", "event_time": AT, "battery": 7}, V1), AT_MS)
    v2 = decoder.decode(
        framed(2, {"device_id": "s-2", "event_time": AT, "battery": 2**40, "firmware": "1.2"}, V2), AT_MS
    )
    assert v1 == DecodedEvent(AT_MS, {"device_id": "s-1", "battery": 7})
    assert v2 == DecodedEvent(AT_MS, {"device_id": "s-2", "battery": 2**40})


def test_each_kind_of_broken_record_is_quarantined_with_its_own_reason():
    decoder = _decoder(Schemas())
    good = framed(1, {"device_id": "s-1", "event_time": AT, "battery": 7}, V1)
    cases = {
        "not_registry_framed": json.dumps({"device_id": "s-1"}).encode(),
        "truncated": b"\x00\x00\x01",
        "unknown_schema_id": b"\x00\x00\x00\x00\x09" + good[5:],
        "malformed_avro": good[:-3],  # cut inside the record
    }
    for reason, value in cases.items():
        result = decoder.decode(value, AT_MS)
        assert isinstance(result, Rejection) and result.reason == reason, (reason, result)
    # Bytes of another schema: v2's record read as v1 leaves bytes over.
    other = framed(2, {"device_id": "s", "event_time": AT, "battery": 1, "firmware": "x"}, V2)
    result = decoder.decode(b"\x00\x00\x00\x00\x01" + other[5:], AT_MS)
    assert isinstance(result, Rejection) and result.reason == "malformed_avro" and "not written with" in result.detail


def test_the_rules_after_decoding_are_the_json_ones():
    decoder = _decoder(Schemas())
    future = decoder.decode(
        framed(1, {"device_id": "s", "event_time": datetime(2030, 1, 1, tzinfo=UTC), "battery": 1}, V1), AT_MS
    )
    assert isinstance(future, Rejection) and future.reason == "future_event_time"
    oversized = decoder.decode(b"\x00" + b"\x01" * 2_000_000, AT_MS)
    assert isinstance(oversized, Rejection) and oversized.reason == "oversized"


def test_a_registry_that_does_not_answer_fails_the_batch_and_quarantines_nothing():
    schemas = Schemas()
    schemas.down = True
    with pytest.raises(RegistryUnavailableError):
        _decoder(schemas).decode(framed(1, {"device_id": "s", "event_time": AT, "battery": 1}, V1), AT_MS)


def test_a_schema_named_in_the_value_schema_header_by_guid_or_id_decodes_the_bare_record():
    decoder = _decoder(Schemas())
    record = {"device_id": "s-2", "event_time": AT, "battery": 5, "firmware": "2.0"}
    bare = framed(2, record, V2)[5:]
    by_guid = [("traceparent", b"00-ab"), ("__value_schema_id", b"\x01" + V2_GUID.bytes)]
    assert decoder.decode(bare, AT_MS, by_guid) == DecodedEvent(AT_MS, {"device_id": "s-2", "battery": 5})
    by_id = [("__value_schema_id", b"\x00\x00\x00\x00\x02")]
    assert decoder.decode(bare, AT_MS, by_id) == DecodedEvent(AT_MS, {"device_id": "s-2", "battery": 5})
    for header, reason in (
        (b"\x01" + uuid.UUID(int=7).bytes, "unknown_schema_id"),
        (b"\x01\x02", "truncated"),
        (b"\x05abcd", "not_registry_framed"),
    ):
        result = decoder.decode(bare, AT_MS, [("__value_schema_id", header)])
        assert isinstance(result, Rejection) and result.reason == reason, (header, result)
    unknown = decoder.decode(bare, AT_MS, [("__value_schema_id", b"\x01" + uuid.UUID(int=7).bytes)])
    assert "GUID 00000000-0000-0000-0000-000000000007" in unknown.detail


KEY = {"type": "record", "name": "Key", "fields": [{"name": "tenant", "type": "string"}]}


def test_an_avro_key_decodes_into_the_key_fields_and_a_bad_key_is_quarantined_with_its_own_reason():
    class WithKey(Schemas):
        def avro(self, schema_id):
            return parse_schema(KEY) if schema_id == 7 else super().avro(schema_id)

    payload = PayloadSchema(
        event_time_field="event_time",
        fields=PAYLOAD.fields,
        format="avro",
        registry_url="http://registry:8081",
        key_format="avro",
        key_fields=(PayloadField("tenant", "string"),),
    )
    schemas = WithKey()
    decoder = RecordDecoder(
        payload, 3_600_000, AvroDocuments(schemas), AvroDocuments(schemas, header_key="__key_schema_id")
    )
    value = framed(1, {"device_id": "s-1", "event_time": AT, "battery": 7}, V1)
    key = framed(7, {"tenant": "acme"}, KEY)
    assert decoder.decode(value, AT_MS, None, key) == DecodedEvent(
        AT_MS, {"device_id": "s-1", "battery": 7, "tenant": "acme"}
    )
    by_header = decoder.decode(value, AT_MS, [("__key_schema_id", b"\x00\x00\x00\x00\x07")], key[5:])
    assert by_header.values["tenant"] == "acme", "the key's schema from the key's header"
    unknown = decoder.decode(value, AT_MS, None, b"\x00\x00\x00\x00\x09" + key[5:])
    assert unknown.reason == "key_unknown_schema_id" and unknown.detail.startswith("the record's key: ")
    missing = decoder.decode(value, AT_MS, None, None)
    assert missing.reason == "missing_field" and "required key field 'tenant'" in missing.detail
