"""Protobuf record values, framed by a schema registry, into documents the record decoder checks.

``ProtobufDocuments(writer_schemas)`` is the Protobuf step of tidemark.record_decoder.RecordDecoder,
as tidemark.avro_documents is Avro's: it unframes a value (the 5-byte prefix, then the message-
index path, tidemark.registry_framing), finds the writer schema by id (compiled once per id by
the client, tidemark.protobuf_schemas) and the message type the path names, and parses the
message.

The document is the message's fields by name, as a JSON object's would be, so the decoder's rules
apply unchanged: a nested message is a nested document (a payload field reaches into it with a
``path``), a ``google.protobuf.Timestamp`` is a datetime (the event-time rule takes it as the
instant it is), the wrapper types are their value, an enum is its value's name, a repeated field
a list and a map a dict. A field with presence (a message, ``optional``, a oneof member, proto2)
that the record does not carry is None, so ``required`` means something for it; a proto3 scalar
without presence always has a value (0, "", false when unset), as Protobuf defines.

A record that cannot be decoded is rejected with its own reason: no magic byte, cut short, an
unknown schema id, a schema that does not compile, a path that names no message, bytes that do not parse as that message, or
fields the message does not declare (a record written with another schema).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from tidemark.registry_framing import VALUE_SCHEMA_HEADER, Framed, Unframed, message_indexes, unframe
from tidemark.writer_schemas import UnknownSchemaError, UnusableSchemaError, WriterSchemas

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_WRAPPERS = frozenset(
    f"google.protobuf.{name}Value"
    for name in ("Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes")
)


class ProtobufDocuments:
    """Turns one framed Protobuf value into ``(document, None)`` or ``(None, (reason, detail))``."""

    def __init__(self, writer_schemas: WriterSchemas, header_key: str = VALUE_SCHEMA_HEADER):
        """``header_key``: the header that may name the schema (the key's: ``__key_schema_id``)."""
        self._schemas = writer_schemas
        self._header_key = header_key
        self._converters: dict[Any, Callable[[Any], dict]] = {}

    def __call__(self, value: bytes, headers=None) -> tuple[dict | None, tuple[str, str] | None]:
        """``headers``: the record's (key, value) pairs, where a schema header may name the schema
        (and then carries the message indexes too)."""
        framed = unframe(value, headers, self._header_key)
        if not isinstance(framed, Framed):
            return None, (framed.reason, framed.detail)
        path = message_indexes(framed.body if framed.header_rest is None else framed.header_rest)
        if isinstance(path, Unframed):
            return None, (path.reason, path.detail)
        indexes, body = path
        if framed.header_rest is not None:
            if body:
                return None, ("malformed_protobuf", f"the schema header holds {len(body)} bytes after its indexes")
            body = framed.body
        try:
            schema = self._schemas.protobuf(framed.schema_id)
        except UnusableSchemaError as error:
            return None, ("unusable_schema", str(error))
        except UnknownSchemaError as error:
            return None, ("unknown_schema_id", f"{error}: the record names a schema no one registered")
        try:
            message_class = schema.message_class(indexes)
        except IndexError:
            return None, (
                "malformed_protobuf",
                f"message indexes {list(indexes)} name no message of schema {framed.schema_id}",
            )
        try:
            message = message_class.FromString(body)
        except Exception as error:  # noqa: BLE001 - google.protobuf.message.DecodeError, by backend
            return None, (
                "malformed_protobuf",
                f"the bytes do not parse as {message_class.DESCRIPTOR.full_name} of schema {framed.schema_id}: {error}"[
                    :500
                ],
            )
        unknown = _unknown_field_numbers(message)
        if unknown:
            return None, (
                "malformed_protobuf",
                f"the record holds fields {unknown} that {message_class.DESCRIPTOR.full_name} of schema "
                f"{framed.schema_id} does not declare: it was not written with that schema",
            )
        return self._converter(message_class.DESCRIPTOR)(message), None

    def _converter(self, descriptor) -> Callable[[Any], dict]:
        found = self._converters.get(descriptor)
        if found is None:
            found = self._converters[descriptor] = _message_converter(descriptor, self._converters)
        return found


def _unknown_field_numbers(message) -> list[int]:
    from google.protobuf.unknown_fields import UnknownFieldSet

    return sorted({field.field_number for field in UnknownFieldSet(message)})


def _message_converter(descriptor, converters: dict) -> Callable[[Any], dict]:
    """A function from a message of ``descriptor`` to its document, built once per type (the
    per-field decisions are made here, not per record)."""
    fields = []
    for field in descriptor.fields:
        value = _value_converter(field, converters)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            entry_value = _value_converter(value_field, converters)
            fields.append((field.name, False, lambda raw, convert=entry_value: {k: convert(v) for k, v in raw.items()}))
        elif field.is_repeated:
            fields.append((field.name, False, lambda raw, convert=value: [convert(item) for item in raw]))
        else:
            fields.append((field.name, field.has_presence, value))

    def convert(message) -> dict:
        document = {}
        for name, presence, value in fields:
            if presence and not message.HasField(name):
                document[name] = None
            else:
                document[name] = value(getattr(message, name))
        return document

    return convert


def _value_converter(field, converters: dict) -> Callable[[Any], Any]:
    if field.enum_type is not None:
        enum = field.enum_type
        return lambda number: enum.values_by_number[number].name if number in enum.values_by_number else number
    message_type = field.message_type
    if message_type is None:
        return _same
    if message_type.full_name == "google.protobuf.Timestamp":
        return _instant
    if message_type.full_name in _WRAPPERS:
        return _wrapped

    def nested(message) -> dict:
        convert = converters.get(message_type)
        if convert is None:
            convert = converters[message_type] = _message_converter(message_type, converters)
        return convert(message)

    return nested


def _same(value: Any) -> Any:
    return value


def _wrapped(message) -> Any:
    return message.value


def _instant(timestamp) -> datetime:
    """A Timestamp as an aware UTC datetime (microseconds: the event-time rule keeps milliseconds)."""
    return _EPOCH + timedelta(seconds=timestamp.seconds, microseconds=timestamp.nanos // 1000)
