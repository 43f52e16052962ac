"""The schema registry's wire format: how a producer's serializer frames each record value.

    byte 0        magic byte 0
    bytes 1..4    the writer schema's id in the registry, a big-endian unsigned int
    bytes 5..     the encoded record (Avro binary; Protobuf puts message indexes first)

A newer serializer may carry the schema in a record header instead (``__value_schema_id``, or
``__key_schema_id`` for a key): magic byte 1 and the schema's 16-byte GUID (or magic byte 0 and
the 4-byte id), then, for Protobuf, the message indexes; the value is then the encoded record
alone. When the header is there it is read first, as confluent-kafka's deserializers do.

Protobuf's body starts with the path of the message type in the schema's file: a count, then
that many indexes (each a zig-zag varint), 0 alone meaning the file's first message, [0]
(``message_indexes``).

``unframe`` splits a value into the schema id and the encoded record, or says why it cannot:
a value that does not start with the magic byte was not written by a registry serializer (a
JSON producer on the wrong topic, a corrupted record), and one shorter than the prefix is cut.
Both are the record's fault, so both are quarantined with their own reason.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

MAGIC_BYTE = 0
GUID_MAGIC_BYTE = 1
PREFIX_BYTES = 5
VALUE_SCHEMA_HEADER = "__value_schema_id"
KEY_SCHEMA_HEADER = "__key_schema_id"


@dataclass(frozen=True)
class Framed:
    """A framed value: the writer schema's id (an int, or a GUID's text when a header named the
    schema by GUID) and the encoded record. ``header_rest``: when the schema came from a header,
    what followed the id there (Protobuf's message indexes), else None."""

    schema_id: int | str
    body: bytes
    header_rest: bytes | None = None


@dataclass(frozen=True)
class Unframed:
    """Why a value is not a registry-framed record: ``reason`` a tidemark.record_decoder.RejectReason."""

    reason: str
    detail: str


def unframe(
    value: bytes, headers: Sequence[tuple[str, bytes | None]] | None = None, header_key: str = VALUE_SCHEMA_HEADER
) -> Framed | Unframed:
    """The schema id and encoded record of ``value`` (non-empty), or why there are none; the
    schema header ``header_key`` among ``headers`` first, when the record has it."""
    for key, header in headers or ():
        if key == header_key:
            return _from_header(value, header or b"", header_key)
    if value[0] != MAGIC_BYTE:
        return Unframed(
            "not_registry_framed",
            f"the value starts with byte {value[0]}, not the registry's magic byte 0: it was not written by "
            "a schema-registry serializer",
        )
    if len(value) < PREFIX_BYTES:
        return Unframed(
            "truncated", f"the value is {len(value)} bytes, shorter than the registry's {PREFIX_BYTES}-byte prefix"
        )
    return Framed(int.from_bytes(value[1:PREFIX_BYTES], "big"), value[PREFIX_BYTES:])


def _from_header(value: bytes, header: bytes, header_key: str) -> Framed | Unframed:
    if header[:1] == bytes([GUID_MAGIC_BYTE]):
        if len(header) < 17:
            return Unframed("truncated", f"the {header_key} header is {len(header)} bytes, shorter than a GUID's 17")
        return Framed(str(uuid.UUID(bytes=header[1:17])), value, header[17:])
    if header[:1] == bytes([MAGIC_BYTE]):
        if len(header) < PREFIX_BYTES:
            return Unframed("truncated", f"the {header_key} header is {len(header)} bytes, shorter than an id's 5")
        return Framed(int.from_bytes(header[1:PREFIX_BYTES], "big"), value, header[PREFIX_BYTES:])
    return Unframed(
        "not_registry_framed",
        f"the {header_key} header starts with {header[:1].hex() or 'nothing'}, not magic byte 0 or 1",
    )


# More nesting than any schema has: a count past it is a corrupted record, not a path to follow.
_MAX_MESSAGE_INDEXES = 100


def message_indexes(body: bytes) -> tuple[tuple[int, ...], bytes] | Unframed:
    """The message-index path at the start of a Protobuf ``body`` (after the 5-byte prefix) and
    the encoded message after it, or why they cannot be read (``truncated``, or
    ``malformed_protobuf`` for a count no schema could have)."""
    count, at = _zigzag_varint(body, 0)
    if count is None:
        return Unframed("truncated", "the record ends inside the Protobuf message indexes: cut short")
    if count == 0:
        return (0,), body[at:]
    if not 0 < count <= _MAX_MESSAGE_INDEXES:
        return Unframed(
            "malformed_protobuf", f"the record gives {count} Protobuf message indexes: not a path to a message"
        )
    indexes = []
    for _ in range(count):
        index, at = _zigzag_varint(body, at)
        if index is None:
            return Unframed("truncated", "the record ends inside the Protobuf message indexes: cut short")
        indexes.append(index)
    return tuple(indexes), body[at:]


def _zigzag_varint(data: bytes, at: int) -> tuple[int | None, int]:
    """The zig-zag varint at ``data[at:]`` and the position after it; None when the data ends
    first (or runs past 10 bytes, longer than any 64-bit varint)."""
    value = shift = 0
    while at < len(data) and shift < 70:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (value >> 1) ^ -(value & 1), at
        shift += 7
    return None, at
