"""Decoding and validation of one log record's value into an event, or a reason to quarantine it.

How a value becomes a document depends on the payload's format: a JSON object (``parse_json``),
or an Avro or Protobuf record framed by a schema registry (tidemark.avro_documents,
tidemark.protobuf_documents, handed in as ``documents``). The rules after it (event time, required fields, types) are the same for both.

Contract: ``RecordDecoder.decode`` never raises for bad input. Every record becomes exactly one of
``DecodedEvent`` (goes to the events table) or ``Rejection`` (goes to quarantine with the raw
bytes), so nothing is dropped and one bad producer cannot crash the job. A rejected record never
reaches the event-time rules, so it can never move a watermark. The one thing it raises is
tidemark.writer_schemas.RegistryUnavailableError: a registry that does not answer is no record's
fault, and fails the batch instead of quarantining records that are fine.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from msgspec.json import decode as _fast_json

from tidemark.duration import format_duration_ms
from tidemark.event_time_text import format_event_time, parse_event_time
from tidemark.stream_config import PayloadSchema
from tidemark.writer_schemas import RegistryUnavailableError, SchemaChangedError

# A value's document, or why it has none: (document, None) or (None, (reason, detail)); called
# with the value and the record's headers ((key, value) pairs, or None).
Documents = Callable[[bytes, Any], "tuple[Any, tuple[str, str] | None]"]


class RejectReason:
    """Stable reason codes, so quarantine counts can be grouped and thresholds set per reason."""

    EMPTY_VALUE = "empty_value"
    OVERSIZED = "oversized"
    MALFORMED_JSON = "malformed_json"
    TOO_DEEPLY_NESTED = "too_deeply_nested"
    NOT_AN_OBJECT = "not_an_object"
    MISSING_EVENT_TIME = "missing_event_time"
    UNPARSABLE_EVENT_TIME = "unparsable_event_time"
    FUTURE_EVENT_TIME = "future_event_time"
    MISSING_FIELD = "missing_field"
    WRONG_TYPE = "wrong_type"
    # The decoder itself failed on this record in a way no rule above names: the record is kept,
    # the stream goes on, and the detail names the failure so the rule can be added.
    UNDECODABLE = "undecodable"
    # Registry-framed payloads (Avro, Protobuf): no magic byte, cut short, an id no one registered, bytes
    # that do not decode with the writer schema the id names.
    NOT_REGISTRY_FRAMED = "not_registry_framed"
    TRUNCATED = "truncated"
    UNKNOWN_SCHEMA_ID = "unknown_schema_id"
    MALFORMED_AVRO = "malformed_avro"
    # Protobuf: bytes that do not parse as the message the id and indexes name, or that hold
    # fields it does not declare; a registered schema protoc cannot compile.
    MALFORMED_PROTOBUF = "malformed_protobuf"
    UNUSABLE_SCHEMA = "unusable_schema"
    # A key that does not decode (for a stream with key_fields) takes the key's own reason with
    # this prefix: key_malformed_json, key_unknown_schema_id...
    KEY_PREFIX = "key_"


@dataclass(frozen=True)
class DecodedEvent:
    """A valid record: its event time (ms since the epoch, UTC) and typed payload values by field."""

    event_time_ms: int
    values: dict[str, Any]


@dataclass(frozen=True)
class Rejection:
    """Why a record was quarantined: a reason code and a sentence for the person reading it."""

    reason: str
    detail: str


# The earliest and latest event times tidemark accepts at all (years 1970..9999); outside that the
# value is garbage, not a clock that is a little off.
MIN_EVENT_TIME_MS = 0
MAX_EVENT_TIME_MS = 253_402_300_799_999


class RecordDecoder:
    """Turns raw record values into events according to a stream's payload schema.

    ``max_future_skew_ms`` is the future guard: an event time more than that ahead of the time the
    record is read is a broken clock, and is quarantined instead of being allowed to seal hours
    that are not over.
    """

    def __init__(
        self,
        schema: PayloadSchema,
        max_future_skew_ms: int,
        documents: Documents | None = None,
        key_documents: Documents | None = None,
    ):
        """``documents``: how a value becomes a document (default: a JSON object, ``json_documents``);
        ``key_documents``: how the key does, for a schema with ``key_fields`` (default: JSON)."""
        self._schema = schema
        self._max_future_skew_ms = max_future_skew_ms
        self._documents = documents or json_documents
        self._key_documents = key_documents or json_documents
        self._checkers = field_checkers(schema.fields)
        self._key_checkers = field_checkers(schema.key_fields)

    def decode(self, value: bytes | None, read_time_ms: int, headers=None, key: bytes | None = None):
        """Decode one record value read at ``read_time_ms`` (ms since the epoch, UTC); ``headers``
        its (key, value) pairs, where a registry serializer may have put the schema's id; ``key``
        its key, decoded into the key fields when the schema declares any. Returns a
        DecodedEvent or a Rejection.

        Never raises for anything a record can hold: one record the rules did not foresee must
        cost that record a quarantine row, not halt every partition of the stream on every
        restart (each restart replays the same batch).
        """
        try:
            return self._decode(value, read_time_ms, headers, key)
        except (RegistryUnavailableError, SchemaChangedError):
            raise  # not the record's fault: the batch fails and is retried
        except RecursionError:
            return Rejection(
                RejectReason.TOO_DEEPLY_NESTED, "the JSON value is nested too deeply to decode (thousands of levels)"
            )
        except Exception as error:  # noqa: BLE001 - the contract: every record becomes a row
            return Rejection(
                RejectReason.UNDECODABLE, f"the decoder failed on this record: {type(error).__name__}: {error}"[:500]
            )

    def _decode(self, value: bytes | None, read_time_ms: int, headers, key) -> DecodedEvent | Rejection:
        if value is None:
            return Rejection(
                RejectReason.EMPTY_VALUE,
                "the record's value is null: a tombstone, which deletes its key in a compacted topic",
            )
        if not value:
            return Rejection(RejectReason.EMPTY_VALUE, "the record has no value")
        if len(value) > self._schema.max_record_bytes:
            return Rejection(
                RejectReason.OVERSIZED,
                f"the value is {len(value)} bytes, more than max_record_bytes {self._schema.max_record_bytes}",
            )
        document, refused = self._documents(value, headers)
        if refused is not None:
            return Rejection(*refused)

        event_time = self._event_time_ms(document)
        if isinstance(event_time, Rejection):
            return event_time
        if event_time - read_time_ms > self._max_future_skew_ms:
            return Rejection(
                RejectReason.FUTURE_EVENT_TIME,
                f"event time {format_event_time(event_time)} is {format_duration_ms(event_time - read_time_ms)} ahead of the "
                f"time it was read ({format_event_time(read_time_ms)}); max_future_skew is {format_duration_ms(self._max_future_skew_ms)}",
            )

        values: dict[str, Any] = {}
        refused = self._typed(document, self._checkers, values, "field")
        if refused is not None:
            return refused
        if self._key_checkers:
            key_document, key_refused = self._key_documents(key, headers) if key else ({}, None)
            if key_refused is not None:
                reason, detail = key_refused
                return Rejection(RejectReason.KEY_PREFIX + reason, f"the record's key: {detail}")
            if not isinstance(key_document, dict):
                return Rejection(
                    RejectReason.KEY_PREFIX + RejectReason.NOT_AN_OBJECT,
                    f"the record's key is a {_json_kind(key_document)}, not an object",
                )
            refused = self._typed(key_document, self._key_checkers, values, "key field")
            if refused is not None:
                return refused
        return DecodedEvent(event_time, values)

    @staticmethod
    def _typed(document: dict, checkers: list, values: dict[str, Any], what: str) -> Rejection | None:
        """Each checker's field of ``document`` typed into ``values``, or why the record is refused."""
        for name, path, required, check, expected in checkers:
            raw = document.get(name) if path is None else value_at_path(document, path)
            if raw is None:
                if required:
                    where = name if path is None else ".".join(path)
                    return Rejection(RejectReason.MISSING_FIELD, f"required {what} {where!r} is missing or null")
                values[name] = None
                continue
            typed = check(raw)
            if typed is NOT_OF_TYPE:
                return Rejection(
                    RejectReason.WRONG_TYPE,
                    f"{what} {name!r} must be {expected}, got {_json_kind(raw)} {_preview(raw)}",
                )
            values[name] = typed
        return None

    def _event_time_ms(self, document: dict) -> int | Rejection:
        field = self._schema.event_time_field
        raw = document.get(field)
        if raw is None:
            return Rejection(RejectReason.MISSING_EVENT_TIME, f"the event-time field {field!r} is missing or null")
        if isinstance(raw, datetime):  # an Avro timestamp logical type: an instant, whatever the format says
            event_time = datetime_ms(raw)
        elif self._schema.event_time_format == "epoch_millis":
            if isinstance(raw, bool) or not isinstance(raw, int):
                return Rejection(
                    RejectReason.UNPARSABLE_EVENT_TIME,
                    f"{field!r} must be whole milliseconds since the epoch, got {_json_kind(raw)} {_preview(raw)}",
                )
            event_time = raw
        else:
            event_time = _parse_iso8601_ms(raw)
            if event_time is None:
                return Rejection(
                    RejectReason.UNPARSABLE_EVENT_TIME,
                    f"{field!r} must be an ISO-8601 time with a UTC offset, e.g. 2026-11-22T08:59:59.999Z; "
                    f"got {_preview(raw)}",
                )
        if not MIN_EVENT_TIME_MS <= event_time <= MAX_EVENT_TIME_MS:
            return Rejection(RejectReason.UNPARSABLE_EVENT_TIME, f"{field!r} {event_time} is outside years 1970..9999")
        return event_time


def field_checkers(fields) -> list:
    """(name, path or None, required, type check, type name) per declared field."""
    return [
        (
            field.name,
            tuple(field.path.split(".")) if field.path else None,
            field.required,
            _TYPE_CHECKS[field.type],
            field.type,
        )
        for field in fields
    ]


def value_at_path(document: dict, path: tuple[str, ...]) -> Any:
    """The value at ``path`` (names into nested objects), None when a step is missing or not an object."""
    value: Any = document
    for name in path:
        if not isinstance(value, dict):
            return None
        value = value.get(name)
    return value


def json_documents(value: bytes, headers=None) -> tuple[Any, tuple[str, str] | None]:
    """A JSON object value's document, or why it is none."""
    try:
        document = parse_json(value)
    except (ValueError, UnicodeDecodeError) as error:
        return None, (RejectReason.MALFORMED_JSON, f"not valid JSON: {error}")
    if not isinstance(document, dict):
        return None, (RejectReason.NOT_AN_OBJECT, f"expected a JSON object, got a JSON {_json_kind(document)}")
    return document, None


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)


def datetime_ms(moment: datetime) -> int:
    """An aware datetime → ms since the epoch (a naive one is taken as UTC, as Avro's local
    timestamps are by fastavro), exact to the millisecond."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MILLISECOND


def parse_json(value: bytes) -> Any:
    """``json.loads(value)``, about seven times faster for the values producers send.

    msgspec parses first; what it refuses, the standard library parses again, so every verdict
    and error message stays the standard library's: NaN, numbers beyond a double, lone
    surrogates, a byte-order mark, UTF-16 and malformed input all end as json.loads has them
    end. Where msgspec succeeds, its document equals json.loads's (tests/unit/
    test_record_decoder_properties.py checks that on generated and hostile input).
    """
    try:
        return _fast_json(value)
    except Exception:  # noqa: BLE001 - any refusal: the standard library decides
        return json.loads(value)


def _parse_iso8601_ms(raw: Any) -> int | None:
    """ISO-8601 with an explicit offset → ms since the epoch; None when it is not one."""
    if not isinstance(raw, str):
        return None
    try:
        return parse_event_time(raw)
    except ValueError:
        return None


# What a field check returns for a value it refuses (None is a value: a null field).
NOT_OF_TYPE = object()


def _as_string(raw: Any) -> Any:
    return raw if isinstance(raw, str) else NOT_OF_TYPE


def _as_double(raw: Any) -> Any:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        return NOT_OF_TYPE
    try:
        value = float(raw)  # an integer past the double range (10**400) overflows: the wrong type, not a crash
    except OverflowError:
        return NOT_OF_TYPE
    return value if math.isfinite(value) else NOT_OF_TYPE


def _integer_check(low: int, high: int):
    def check(raw: Any) -> Any:
        if isinstance(raw, bool):
            return NOT_OF_TYPE
        if isinstance(raw, float) and raw.is_integer():
            raw = int(raw)
        if not isinstance(raw, int) or not low <= raw <= high:
            return NOT_OF_TYPE
        return raw

    return check


def _as_boolean(raw: Any) -> Any:
    return raw if isinstance(raw, bool) else NOT_OF_TYPE


_TYPE_CHECKS = {
    "string": _as_string,
    "double": _as_double,
    "int": _integer_check(-(2**31), 2**31 - 1),
    "long": _integer_check(-(2**63), 2**63 - 1),
    "boolean": _as_boolean,
}


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, (bytes, bytearray)):
        return "bytes"  # an Avro bytes field
    if value is None:
        return "null"
    return type(value).__name__


def _preview(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, default=repr)  # an Avro value may be bytes, a datetime, a Decimal
    return text if len(text) <= limit else text[: limit - 3] + "..."
