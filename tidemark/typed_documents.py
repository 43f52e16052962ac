"""The fast path of an Avro or Protobuf stream's decoding: each value's document as today, the rules a column at a time.

RecordDecoder (tidemark.record_decoder) takes one record at a time through its documents step
(tidemark.avro_documents, tidemark.protobuf_documents), then through the event-time rule and a
check per declared field: a few Python calls and branches per field per record, which for these
formats cost about as much again as the format's own decoding. For an Avro or Protobuf payload
whose fields are all in the value (no key fields), this module makes each value's document with
the very same step and the record's own headers, then reads the event times and each declared
field (by its ``path``) off the whole batch as columns, and types each column with the decoder's
own field check. What it calls of the decoder (its checks, its path walk, its datetime
conversion) it does not write again, so the two cannot drift apart; the one thing it adds is a
test, without a call, for the value the format nearly always gives (an exact str, a finite
float, an int within the type's range, a bool), which the check would return as it is.

The contract, as tidemark.typed_json's: a value this path accepts is a valid record, with the
event time and the column values RecordDecoder gives it (tests/unit/test_typed_documents.py
compares the decode stage with and without this path on generated and hostile records). Every
value it does not accept as it is gets None and goes through RecordDecoder, the one place that
says why a record is refused: empty or oversized, a documents step that refuses it or fails on
it, an event time missing, unparsable, outside years 1970..9999 or ahead of the future guard, a
required field missing or null, a value the field's check refuses. Nothing is refused here, so
the fast path changes the cost of a valid record, never what becomes of any record.

What is no record's fault still raises, as RecordDecoder lets it: a registry that does not
answer (tidemark.writer_schemas.RegistryUnavailableError), a writer schema with a field the
running job has no column for (SchemaChangedError).
"""

from __future__ import annotations

from datetime import datetime
from math import isfinite
from typing import Any

from tidemark.event_time_text import parse_event_time
from tidemark.record_decoder import (
    MAX_EVENT_TIME_MS,
    MIN_EVENT_TIME_MS,
    NOT_OF_TYPE,
    Documents,
    datetime_ms,
    field_checkers,
    value_at_path,
)
from tidemark.stream_config import REGISTRY_FORMATS, PayloadSchema
from tidemark.typed_json import TypedBatch
from tidemark.writer_schemas import RegistryUnavailableError, SchemaChangedError


class TypedDocuments:
    """Column-wise decoding of one Avro or Protobuf payload's values (see the module).
    ``of(payload, skew, documents)`` is None for a payload this path does not serve: JSON
    (tidemark.typed_json's), or one with key fields."""

    def __init__(self, payload: PayloadSchema, max_future_skew_ms: int, documents: Documents):
        self._documents = documents
        self._event_time_field = payload.event_time_field
        self._epoch_millis = payload.event_time_format == "epoch_millis"
        self._max_bytes = payload.max_record_bytes
        self._max_future_skew_ms = max_future_skew_ms
        # (name, path or None, required, check, type name) per field, as RecordDecoder holds them.
        self._checkers = field_checkers(payload.fields)

    @classmethod
    def of(cls, payload: PayloadSchema, max_future_skew_ms: int, documents: Documents | None) -> TypedDocuments | None:
        if payload.format not in REGISTRY_FORMATS or payload.key_fields or documents is None:
            return None
        return cls(payload, max_future_skew_ms, documents)

    def decode(self, values: list[bytes | None], read_times_ms: list[int], headers: list) -> TypedBatch:
        """``values`` (None for a row that is not a record: it stays None) read at
        ``read_times_ms`` (ms since the epoch, UTC), with ``headers`` (each row's (key, value)
        pairs, or None), handed to the documents step as RecordDecoder hands them."""
        documents = self._documents_of(values, headers)
        field, epoch_millis, skew = self._event_time_field, self._epoch_millis, self._max_future_skew_ms
        event_times = [None if d is None else _event_time_ms(d.get(field), epoch_millis) for d in documents]
        event_times = [
            t if t is not None and MIN_EVENT_TIME_MS <= t <= MAX_EVENT_TIME_MS and t - read_time <= skew else None
            for t, read_time in zip(event_times, read_times_ms)
        ]
        columns = []
        for name, path, required, check, kind in self._checkers:
            if path is None:
                raw = [None if d is None else d.get(name) for d in documents]
            else:
                raw = [None if d is None else value_at_path(d, path) for d in documents]
            typed = _typed_column(raw, kind, check)
            # The check never turns a value into None: a None here is a field missing or null.
            if required:
                undecided = [row for row, value in enumerate(typed) if value is NOT_OF_TYPE or value is None]
            else:
                undecided = [row for row, value in enumerate(typed) if value is NOT_OF_TYPE]
            for row in undecided:
                # None, not the refused value: the stage builds each column's Arrow array whole.
                event_times[row] = typed[row] = None
            columns.append(typed)
        return TypedBatch(event_times, columns)

    def _documents_of(self, values: list[bytes | None], headers: list) -> list[dict | None]:
        """Each value's document, None where RecordDecoder must say what is wrong with it."""
        documents_step, max_bytes = self._documents, self._max_bytes
        documents: list[dict | None] = []
        for value, pairs in zip(values, headers):
            # Empty and oversized values never reach the step in RecordDecoder: not here either,
            # so no registry is asked about a schema id RecordDecoder would never look up.
            if not value or len(value) > max_bytes:
                documents.append(None)
                continue
            try:
                document, _ = documents_step(value, pairs)
            except (RegistryUnavailableError, SchemaChangedError):
                raise  # not the record's fault: the batch fails and is retried, as in RecordDecoder
            except Exception:  # noqa: BLE001 - RecordDecoder names the failure (undecodable)
                document = None
            documents.append(document if isinstance(document, dict) else None)
        return documents


# The ranges of RecordDecoder's integer checks (tidemark.record_decoder._TYPE_CHECKS): a value
# inside is kept as it is without a call. Were one written wider than the check's, an int the
# check refuses would be kept: tests/unit/test_typed_documents.py tries both ends of each.
_INTEGER_RANGES = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}


def _typed_column(raw: list, kind: str, check) -> list:
    """``raw`` typed as RecordDecoder types each value: None stays None, a value of the exact
    type the format gives (within the range, finite) is kept, and any other goes through the
    decoder's ``check`` (its typed value, or NOT_OF_TYPE). The check looks at a value's type before
    anything else, so no value a document holds makes it raise."""
    if kind == "string":
        return [v if v.__class__ is str else None if v is None else check(v) for v in raw]
    if kind == "boolean":
        return [v if v.__class__ is bool else None if v is None else check(v) for v in raw]
    if kind == "double":  # float(v) is v for a float
        return [v if v.__class__ is float and isfinite(v) else None if v is None else check(v) for v in raw]
    low, high = _INTEGER_RANGES[kind]
    return [v if v.__class__ is int and low <= v <= high else None if v is None else check(v) for v in raw]


def _event_time_ms(raw: Any, epoch_millis: bool) -> int | None:
    """The event time RecordDecoder reads from ``raw`` before its bounds (ms since the epoch,
    UTC), None where it refuses it: a datetime (an Avro timestamp logical type, a Protobuf
    Timestamp) whatever the format; else whole milliseconds, or ISO-8601 text with an offset."""
    try:
        if isinstance(raw, datetime):
            return datetime_ms(raw)
        if epoch_millis:
            return raw if isinstance(raw, int) and not isinstance(raw, bool) else None
        return parse_event_time(raw) if isinstance(raw, str) else None
    except Exception:  # noqa: BLE001 - a datetime whose zone fails, text that does not parse: RecordDecoder's to name
        return None
