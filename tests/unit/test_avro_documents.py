"""Avro values framed by a schema registry, through the record decoder: every record an event or a
quarantine row with its own reason; a registry that does not answer fails the batch instead."""

from __future__ import annotations

import io
import json
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


class Schemas:
    """The registry as the decoder sees it: ids 1 and 2; ``down`` makes it unavailable."""

    def __init__(self):
        self.down = False
        self.asked: list[int] = []

    def avro(self, schema_id: int):
        self.asked.append(schema_id)
        if self.down:
            raise RegistryUnavailableError("the schema registry at http://registry:8081 did not answer")
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
