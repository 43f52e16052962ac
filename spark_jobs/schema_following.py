"""A stream whose columns follow its registry (``payload.columns_from: follow_registry``): the
columns a job starts with, from the subject's registered versions and the events table as it is.

Every job of the stream (persist, backfill, recovery, re-drive) calls ``follow_registry`` before
it makes or checks its tables, so they all start with the same columns; the rules are
tidemark.schema_evolution's. A column added here is added to the tables by LakeTables.ensure,
in place, one ALTER per column that holds after any race. A job that meets a newer writer schema
while it runs fails that batch (tidemark.writer_schemas.SchemaChangedError), and its next run
starts here again.
"""

from __future__ import annotations

import json
import logging

import msgspec

from tidemark.schema_evolution import SQL_TYPES, SchemaVersion, avro_version_fields, followed_payload
from tidemark.stream_config import StreamConfig

log = logging.getLogger("tidemark.persist")

# The events table's Delta types as tidemark's column SQL types.
_DELTA_SQL = {"integer": "INT", "long": "BIGINT", "double": "DOUBLE", "string": "STRING", "boolean": "BOOLEAN"}


def follow_registry(stream: StreamConfig) -> StreamConfig:
    """``stream`` with its registry's fields as nullable columns (unchanged unless it follows its
    registry). Raises tidemark.schema_evolution.SchemaEvolutionError for a change the table
    cannot follow, RegistryUnavailableError for a registry that does not answer."""
    payload = stream.payload
    if payload.columns_from != "follow_registry":
        return stream
    from connectors.schema_registry_client import registry_client
    from tidemark.registry_access import RegistryAccess

    subject = payload.registry_subject or f"{stream.source.log_name}-value"
    client = registry_client(RegistryAccess.of(payload.registry_url, payload.registry_conn_id))
    versions = [
        SchemaVersion(int(answer["version"]), int(answer["id"]), avro_version_fields(json.loads(answer["schema"])))
        for answer in client.subject_versions(subject)
        if answer.get("schemaType", "AVRO") == "AVRO"
    ]
    followed = followed_payload(payload, versions, _events_columns(stream))
    added = [field.name for field in followed.fields[len(payload.fields) :]]
    log.info(
        {
            "event": "columns_followed",
            "stream": stream.name,
            "subject": subject,
            "versions": [v.version for v in versions],
            "columns_from_registry": {name: SQL_TYPES[f.type] for f in followed.fields if (name := f.name) in added},
        }
    )
    return msgspec.structs.replace(stream, payload=followed)


def _events_columns(stream: StreamConfig) -> dict[str, str]:
    """The events table's columns (name → SQL type of tidemark's types; others as Delta names
    them), empty when the table does not exist yet. Read from the Delta log with deltalake."""
    from connectors.lake_storage import is_delta_table, open_delta_table

    path = stream.table_path("events")
    if not is_delta_table(path):
        return {}
    columns = {}
    for field in open_delta_table(path).schema().fields:
        kind = getattr(field.type, "type", str(field.type))  # a primitive's name: "integer", "long"...
        columns[field.name] = _DELTA_SQL.get(kind, kind)
    return columns
