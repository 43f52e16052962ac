"""The schema registry's wire format: how a producer's serializer frames each record value.

    byte 0        magic byte 0
    bytes 1..4    the writer schema's id in the registry, a big-endian unsigned int
    bytes 5..     the encoded record (Avro binary; Protobuf puts message indexes first)

``unframe`` splits a value into the schema id and the encoded record, or says why it cannot:
a value that does not start with the magic byte was not written by a registry serializer (a
JSON producer on the wrong topic, a corrupted record), and one shorter than the prefix is cut.
Both are the record's fault, so both are quarantined with their own reason.
"""

from __future__ import annotations

from dataclasses import dataclass

MAGIC_BYTE = 0
PREFIX_BYTES = 5


@dataclass(frozen=True)
class Framed:
    """A framed value: the writer schema's id and the encoded record after the prefix."""

    schema_id: int
    body: bytes


@dataclass(frozen=True)
class Unframed:
    """Why a value is not a registry-framed record: ``reason`` a tidemark.record_decoder.RejectReason."""

    reason: str
    detail: str


def unframe(value: bytes) -> Framed | Unframed:
    """The schema id and encoded record of ``value`` (non-empty), or why there are none."""
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
