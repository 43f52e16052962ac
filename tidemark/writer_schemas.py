"""Where a decoder finds the schema a record was written with: the contract between the decoders
(tidemark.avro_documents, tidemark.protobuf_documents) and a registry client (connectors.schema_registry_client).

A schema id the registry does not know is the record's fault: ``UnknownSchemaError``, and the
record is quarantined. A registry that does not answer is nobody's record's fault:
``RegistryUnavailableError`` is never caught by a decoder, it fails the batch, which is retried;
nothing is quarantined or skipped for it.
"""

from __future__ import annotations

from typing import Any, Protocol


class UnknownSchemaError(LookupError):
    """The registry answered that it has no schema with this id."""

    def __init__(self, schema_id: int | str):
        super().__init__(f"the registry has no schema with {_named(schema_id)}")
        self.schema_id = schema_id


class UnusableSchemaError(UnknownSchemaError):
    """The registry has the schema, but it cannot be read (a Protobuf schema protoc refuses, an
    import it names that the registry does not have): the record that names it is quarantined."""

    def __init__(self, schema_id: int | str, why: str):
        LookupError.__init__(self, f"the registry's schema {schema_id} cannot be used: {why}")
        self.schema_id = schema_id


def _named(schema_id: int | str) -> str:
    """How a message names a schema: by id (an int) or by GUID (its text, from a schema header)."""
    return f"GUID {schema_id}" if isinstance(schema_id, str) else f"id {schema_id}"


class RegistryUnavailableError(RuntimeError):
    """The registry did not answer, or answered with a server error, for longer than the client
    waits. Fails the batch; the message names the registry, never a credential."""


class SchemaChangedError(RuntimeError):
    """A record's writer schema has a field the running job has no column for (a stream that
    follows its registry, tidemark.schema_evolution): the batch fails before it commits anything,
    and the next run adds the column at start-up. Nothing is quarantined or dropped for it."""


class WriterSchemas(Protocol):
    def avro(self, schema_id: int | str) -> Any:
        """The parsed Avro writer schema (fastavro.parse_schema) registered under ``schema_id``
        (an id, or a GUID's text when a record header named it).
        Raises UnknownSchemaError or RegistryUnavailableError."""

    def protobuf(self, schema_id: int | str) -> Any:
        """The Protobuf writer schema (tidemark.protobuf_schemas.ProtobufSchema) registered under
        ``schema_id``, its imports resolved. Raises UnknownSchemaError (UnusableSchemaError for a
        schema that does not compile) or RegistryUnavailableError."""
