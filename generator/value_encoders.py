"""How the generator writes a record's value: the stream's payload format.

``value_encoder(stream, topic)`` returns the function that turns a generated payload (a dict,
tidemark's telemetry fields and the ISO-8601 event time) into the bytes a producer of that
format writes:

- ``json``: a compact JSON object;
- ``avro``: the schema registry's wire format, as confluent-kafka's AvroSerializer frames it: the
  writer schema is made from the stream's declared fields (the event time as timestamp-millis, an
  optional field as a union with null), registered under ``<topic>-value`` once, before the first
  record, and each value is magic byte 0, the schema's id, the Avro binary record;
- ``protobuf``: the same wire format as confluent-kafka's ProtobufSerializer writes it: a
  ``.proto`` schema made from the declared fields (the event time a google.protobuf.Timestamp, an
  optional field ``optional``), registered as text under ``<topic>-value``, compiled as tidemark
  compiles it (tidemark.protobuf_schemas), and each value is magic byte 0, the id, the message
  index 0 of the file's one message, the encoded message.

The generator writes the declared fields at the top level of the record (a field's ``path`` is
for reading producers' nested records, and is not followed here).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable

from tidemark.event_time_text import parse_event_time
from tidemark.stream_config import PayloadSchema, StreamConfig

_COMPACT_JSON = json.JSONEncoder(separators=(",", ":"))  # one encoder: json.dumps builds one per call
_PROTOBUF_TYPES = {"string": "string", "double": "double", "long": "int64", "int": "int32", "boolean": "bool"}
_AVRO_TYPES = {"string": "string", "double": "double", "long": "long", "int": "int", "boolean": "boolean"}


def value_encoder(stream: StreamConfig, topic: str) -> Callable[[dict], bytes]:
    """The encoder of ``stream``'s payload format; for Avro, registers the writer schema first
    (connectors.schema_registry_client's errors say why it could not)."""
    payload = stream.payload
    if payload.format == "json":
        return lambda record: _COMPACT_JSON.encode(record).encode()
    if payload.format == "protobuf":
        return _protobuf_encoder(payload, topic)
    from fastavro import parse_schema, schemaless_writer

    from connectors.schema_registry_client import register_schema
    from tidemark.registry_access import RegistryAccess

    schema = avro_writer_schema(payload)
    access = RegistryAccess.of(payload.registry_url, payload.registry_conn_id)
    prefix = b"\x00" + register_schema(access, f"{topic}-value", json.dumps(schema)).to_bytes(4, "big")
    parsed = parse_schema(schema)
    time_field = payload.event_time_field

    def encode(record: dict) -> bytes:
        body = io.BytesIO()
        schemaless_writer(body, parsed, {**record, time_field: parse_event_time(record[time_field])})
        return prefix + body.getvalue()

    return encode


def avro_writer_schema(payload: PayloadSchema) -> dict:
    """The Avro record schema of ``payload``'s declared fields and its event time."""
    fields = [{"name": payload.event_time_field, "type": {"type": "long", "logicalType": "timestamp-millis"}}]
    for field in payload.fields:
        kind = _AVRO_TYPES[field.type]
        fields.append(
            {"name": field.name, "type": kind}
            if field.required
            else {"name": field.name, "type": ["null", kind], "default": None}
        )
    return {"type": "record", "name": "Event", "namespace": "tidemark.generator", "fields": fields}


def protobuf_writer_schema(payload: PayloadSchema) -> str:
    """The ``.proto`` text of ``payload``'s declared fields and its event time, one message."""
    lines = [
        'syntax = "proto3";',
        "package tidemark.generator;",
        'import "google/protobuf/timestamp.proto";',
        "message Event {",
        f"  google.protobuf.Timestamp {payload.event_time_field} = 1;",
    ]
    for number, field in enumerate(payload.fields, start=2):
        label = "" if field.required else "optional "
        lines.append(f"  {label}{_PROTOBUF_TYPES[field.type]} {field.name} = {number};")
    return "\n".join([*lines, "}", ""])


def _protobuf_encoder(payload: PayloadSchema, topic: str) -> Callable[[dict], bytes]:
    from connectors.schema_registry_client import register_schema
    from tidemark.protobuf_schemas import ProtobufSchema, file_descriptor
    from tidemark.registry_access import RegistryAccess

    text = protobuf_writer_schema(payload)
    access = RegistryAccess.of(payload.registry_url, payload.registry_conn_id)
    schema_id = register_schema(access, f"{topic}-value", text, schema_type="PROTOBUF")
    message_class = ProtobufSchema([file_descriptor("event.proto", text)]).message_class((0,))
    prefix = b"\x00" + schema_id.to_bytes(4, "big") + b"\x00"  # the message indexes [0]: one 0 byte
    time_field = payload.event_time_field

    def encode(record: dict) -> bytes:
        message = message_class(
            **{name: value for name, value in record.items() if name != time_field and value is not None}
        )
        getattr(message, time_field).FromMilliseconds(parse_event_time(record[time_field]))
        return prefix + message.SerializeToString()

    return encode
