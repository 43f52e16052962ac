"""The table's columns following the stream's registry schema: the rules, without Spark or a registry.

A stream with ``payload.columns: follow_registry`` (Avro) takes its columns from its declared
fields and from the fields of every version registered under its subject (``<topic>-value`` by
default), at the start of every job. The rules, checked across the versions in their order:

- **A new field** (in any version, not declared) becomes a new column, nullable, of the widest
  type its versions gave it: null on the records of versions without it. The jobs add it to the
  tables at start-up, one ALTER per column that holds after any race (spark_jobs.lake.tables).
- **A widened field** (int → long; float and double are one column type, double): the new column
  takes the wider type. A column that already exists with the narrower type is **refused at
  start-up, naming the field**: Delta widens a column only through its type-widening table
  feature, which the deltalake readers tidemark's checks and pages use cannot read.
- **A removed field** leaves its column, null from then on.
- **An incompatible change** (a type that cannot hold the other's values: string ↔ long,
  long → int, ...) **stops the stream at start-up** with one line naming the field and the two
  versions: a person decides (a new field name, or a new topic). A record of such a version
  that reaches a running job is quarantined as ``wrong_type``, keeping its bytes for a re-drive.

Live, backfill and recovery compute the same columns from the same registry and table, so they
write the same rows whatever order they meet the versions in: a record's value for a column is
what its own writer schema gave it, null where that version lacks the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import msgspec

from tidemark.stream_config import RESERVED_COLUMNS, PayloadField, PayloadSchema

# Column type → the SQL type of its column (tidemark.table_schemas).
SQL_TYPES = {"string": "STRING", "double": "DOUBLE", "long": "BIGINT", "int": "INT", "boolean": "BOOLEAN"}
# Each type → the wider types that hold every one of its values.
_WIDENS_TO = {"int": ("long", "double"), "long": (), "double": (), "string": (), "boolean": ()}


@dataclass(frozen=True)
class VersionField:
    """A top-level field of a registered version: its name and column type (None: not a column
    type, e.g. a record, an array, a map: not followed)."""

    name: str
    type: str | None


@dataclass(frozen=True)
class SchemaVersion:
    """One registered version of the subject: its number, schema id and top-level fields."""

    version: int
    schema_id: int
    fields: tuple[VersionField, ...]


class SchemaEvolutionError(ValueError):
    """A change the table cannot follow; the message names the field and the versions."""


def followed_payload(
    payload: PayloadSchema, versions: Sequence[SchemaVersion], columns: Mapping[str, str]
) -> PayloadSchema:
    """``payload`` with a nullable field per registered field it does not declare, typed by the
    rules above; ``columns``: the events table's existing columns (name → SQL type), empty when
    it does not exist yet. Raises SchemaEvolutionError."""
    declared = {field.name: field for field in payload.columns}
    skipped = {payload.event_time_field, *RESERVED_COLUMNS}
    seen: dict[str, tuple[str, SchemaVersion]] = {}  # field → (widest type, version that gave it)
    order: list[str] = []
    for version in versions:
        for field in version.fields:
            if field.type is None or field.name in skipped:
                continue
            if field.name not in seen:
                seen[field.name] = (field.type, version)
                order.append(field.name)
                continue
            before, since = seen[field.name]
            if field.type == before:
                continue
            if field.type in _WIDENS_TO[before]:
                seen[field.name] = (field.type, version)
            elif before not in _WIDENS_TO[field.type]:  # neither holds the other's values
                raise SchemaEvolutionError(
                    f"field {field.name!r} is {before} in schema version {since.version} (id {since.schema_id}) and "
                    f"{field.type} in version {version.version} (id {version.schema_id}): one cannot hold the "
                    "other's values; the stream stops until its contract is decided (a new field name, or a new topic)"
                )
    added = []
    for name in order:
        wanted, version = seen[name]
        if name in declared:
            _check_declared(declared[name], wanted, version)
            continue
        existing = columns.get(name)
        if existing is not None and existing != SQL_TYPES[wanted]:
            raise SchemaEvolutionError(
                f"field {name!r} widens to {wanted} in schema version {version.version} (id {version.schema_id}) but "
                f"its column is {existing}: tidemark does not widen a column (Delta's type widening is a table "
                "feature its deltalake readers cannot read); register the wider values under a new field name"
            )
        added.append(PayloadField(name, wanted, required=False))
    return msgspec.structs.replace(payload, fields=payload.fields + tuple(added))


def _check_declared(field: PayloadField, wanted: str, version: SchemaVersion) -> None:
    """A declared field keeps its declared type; a version whose values it cannot hold is refused."""
    if wanted != field.type and field.type not in _WIDENS_TO[wanted]:
        raise SchemaEvolutionError(
            f"field {field.name!r} is declared {field.type} but schema version {version.version} "
            f"(id {version.schema_id}) gives it {wanted}: the declared column cannot hold those values"
        )


def avro_version_fields(schema: dict) -> tuple[VersionField, ...]:
    """The top-level fields of an Avro record schema (its JSON) as column types: int, long,
    float and double (as double), string, boolean, each alone or in a union with null."""
    return tuple(VersionField(field["name"], _avro_column_type(field["type"])) for field in schema.get("fields", ()))


_AVRO_COLUMN_TYPES = {
    "int": "int",
    "long": "long",
    "float": "double",
    "double": "double",
    "string": "string",
    "boolean": "boolean",
}


def _avro_column_type(kind) -> str | None:
    if isinstance(kind, list):
        others = [k for k in kind if k != "null"]
        return _avro_column_type(others[0]) if len(others) == 1 else None
    if isinstance(kind, dict):
        if kind.get("logicalType"):
            return None  # a timestamp, a decimal...: not a column type tidemark has
        kind = kind.get("type")
    return _AVRO_COLUMN_TYPES.get(kind) if isinstance(kind, str) else None
