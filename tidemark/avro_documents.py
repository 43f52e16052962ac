"""Avro record values, framed by a schema registry, into documents the record decoder checks.

``AvroDocuments(writer_schemas)`` is the Avro step of tidemark.record_decoder.RecordDecoder: it
unframes a value (tidemark.registry_framing), looks its writer schema up by id (cached by the
client, never asked per record) and decodes the record with that schema (fastavro). The
document is the record's fields by name, as a JSON object's would be: the decoder's rules for
the event-time field, the required fields and their types then apply unchanged. Avro's
timestamp logical types arrive as datetimes, which the event-time rule takes.

A record that cannot be decoded is rejected with its own reason (no magic byte, cut short,
an unknown schema id, bytes that do not match the writer schema); a registry that does not
answer is not a record's fault and raises tidemark.writer_schemas.RegistryUnavailableError.
"""

from __future__ import annotations

import io

from tidemark.registry_framing import VALUE_SCHEMA_HEADER, Framed, unframe
from tidemark.writer_schemas import SchemaChangedError, UnknownSchemaError, WriterSchemas


class AvroDocuments:
    """Turns one framed Avro value into ``(document, None)`` or ``(None, (reason, detail))``."""

    def __init__(
        self, writer_schemas: WriterSchemas, header_key: str = VALUE_SCHEMA_HEADER, followed: frozenset | None = None
    ):
        """``header_key``: the header that may name the schema (the key's: ``__key_schema_id``).
        ``followed``: for a stream whose columns follow its registry, the names the running job
        has columns for (and the event-time field): a writer schema with another followed field
        raises SchemaChangedError (tidemark.schema_evolution)."""
        from fastavro import schemaless_reader

        self._schemas = writer_schemas
        self._header_key = header_key
        self._followed = followed
        self._checked: set = set()
        self._read = schemaless_reader  # imported once: a per-record import costs a tenth of the decode

    def __call__(self, value: bytes, headers=None) -> tuple[dict | None, tuple[str, str] | None]:
        """``headers``: the record's (key, value) pairs, where a schema header may name the schema."""
        framed = unframe(value, headers, self._header_key)
        if not isinstance(framed, Framed):
            return None, (framed.reason, framed.detail)
        try:
            schema = self._schemas.avro(framed.schema_id)
        except UnknownSchemaError as error:
            return None, ("unknown_schema_id", f"{error}: the record names a schema no one registered")
        if self._followed is not None and framed.schema_id not in self._checked:
            self._check_followed(framed.schema_id, schema)
        body = io.BytesIO(framed.body)
        try:
            document = self._read(body, schema, None)
        except (EOFError, IndexError, ValueError, UnicodeDecodeError, OverflowError) as error:
            return None, ("malformed_avro", _unreadable(framed, error))
        if body.tell() != len(framed.body):
            return None, (
                "malformed_avro",
                f"schema {framed.schema_id} reads {body.tell()} of the record's {len(framed.body)} bytes: "
                "it was not written with that schema",
            )
        if not isinstance(document, dict):
            return None, ("not_an_object", f"schema {framed.schema_id} is not an Avro record")
        return document, None

    def _check_followed(self, schema_id, schema) -> None:
        from tidemark.schema_evolution import avro_version_fields

        new = [f.name for f in avro_version_fields(schema) if f.type is not None and f.name not in self._followed]
        if new:
            raise SchemaChangedError(
                f"writer schema {schema_id} has field(s) {', '.join(repr(n) for n in new)} that the running job has no "
                "column for: the batch fails, nothing is quarantined, and the next run adds the column"
            )
        self._checked.add(schema_id)


def _unreadable(framed: Framed, error: Exception) -> str:
    if isinstance(error, EOFError):
        return f"the record ends before schema {framed.schema_id} is read ({len(framed.body)} bytes): cut short"
    return f"the bytes do not decode with schema {framed.schema_id}: {type(error).__name__}: {error}"[:500]
