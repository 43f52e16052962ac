"""The fast path of a JSON stream's decoding: each value typed by msgspec in C, no document built.

RecordDecoder (tidemark.record_decoder) parses a value into a document (dicts and lists), then
checks the event time and each declared field in Python. For a JSON payload whose fields are
all in the value (no key fields), this module decodes each value straight into a msgspec Struct
built from the declared fields: the types are checked while parsing, what the payload does not
declare is skipped, and the columns are read off the Structs.

The contract: a value this path accepts is a valid record, with the event time and the column
values RecordDecoder gives it (tests/unit/test_typed_json.py compares both on generated and
hostile input). Every value it does not accept as it is (malformed, a required field missing, a
type the rules would convert or refuse, an event time out of bounds or ahead of the future
guard, bytes that are not strict UTF-8) gets None, and goes through RecordDecoder, the one place
that says why a record is refused. So the fast path changes the cost of a valid record, never
what becomes of any record.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec

from tidemark.event_time_text import parse_event_time
from tidemark.record_decoder import MAX_EVENT_TIME_MS, MIN_EVENT_TIME_MS
from tidemark.stream_config import PayloadSchema

_TYPES = {
    "string": str,
    "double": float,  # msgspec takes a JSON integer as a float, as float(raw) does; never NaN or inf
    "int": Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)],
    "long": Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)],
    "boolean": bool,
}

_EVENT_TIME_TYPES = {"iso8601": str, "epoch_millis": int}


@dataclass(frozen=True)
class TypedBatch:
    """What the fast path made of a batch of values: per value its event time (ms since the
    epoch), or None where RecordDecoder must decide; per declared column (the payload's
    ``columns`` order) the values, which mean nothing where the event time is None."""

    event_times: list[int | None]
    columns: list[list[Any]]


class TypedJson:
    """Typed decoding of one JSON payload's values (see the module). ``of(payload, skew)`` is
    None for a payload this path cannot serve: another format, key fields, or field paths that
    make one name both a value and an object."""

    def __init__(self, payload: PayloadSchema, max_future_skew_ms: int, root: type, getters: list):
        self._iso = payload.event_time_format == "iso8601"
        self._max_bytes = payload.max_record_bytes
        self._max_future_skew_ms = max_future_skew_ms
        self._decode = msgspec.json.Decoder(root).decode
        self._getters = getters
        # The fields a record must have (their getters' positions): a null one goes to RecordDecoder.
        self._required = [i for i, field in enumerate(payload.columns) if field.required]

    @classmethod
    def of(cls, payload: PayloadSchema, max_future_skew_ms: int) -> TypedJson | None:
        if payload.format != "json" or payload.key_fields:
            return None
        tree: dict[str, Any] = {payload.event_time_field: _EVENT_TIME_TYPES[payload.event_time_format]}
        paths = []
        for field in payload.fields:
            path = tuple(field.path.split(".")) if field.path else (field.name,)
            if not _place(tree, path, _TYPES[field.type]):
                return None
            paths.append(path)
        root = _struct(tree, "TypedValue")
        return cls(payload, max_future_skew_ms, root, [_getter(root, path) for path in paths])

    def decode(self, values: list[bytes | None], read_times_ms: list[int], headers: list | None = None) -> TypedBatch:
        """``values`` (None for a row that is not a record: it stays None) read at ``read_times_ms``.
        ``headers`` is taken so that every typed path is called alike (tidemark.typed_documents
        reads a schema id there); a JSON value never needs its headers."""
        decode, errors, max_bytes = (
            self._decode,
            (msgspec.DecodeError, UnicodeDecodeError, RecursionError),
            self._max_bytes,
        )
        typed: list[Any] = []
        for value in values:
            try:
                # Strict UTF-8 first: msgspec does not check the text of what it skips, where
                # RecordDecoder refuses the whole value.
                typed.append(decode(value) if value and len(value) <= max_bytes and value.decode() else None)
            except errors:
                typed.append(None)
        columns = [[None if t is None else getter(t) for t in typed] for getter in self._getters]
        # The event time is the tree's first name (see of): f0.
        raw_times = [None if t is None else t.f0 for t in typed]
        event_times = [_iso_ms(raw) for raw in raw_times] if self._iso else raw_times
        skew = self._max_future_skew_ms
        event_times = [
            t if t is not None and MIN_EVENT_TIME_MS <= t <= MAX_EVENT_TIME_MS and t - read_time <= skew else None
            for t, read_time in zip(event_times, read_times_ms)
        ]
        for i in self._required:
            for row, value in enumerate(columns[i]):
                if value is None:
                    event_times[row] = None
        return TypedBatch(event_times, columns)


def _iso_ms(raw: str | None) -> int | None:
    """parse_event_time's answer, None where it refuses."""
    if raw is None:
        return None
    try:
        return parse_event_time(raw)
    except ValueError:
        return None


def _place(tree: dict, path: tuple[str, ...], kind) -> bool:
    """Put ``kind`` at ``path`` in ``tree`` (names into nested objects); False when the path
    meets a name already holding a value, or ends at one already taken."""
    node = tree
    for name in path[:-1]:
        node = node.setdefault(name, {})
        if not isinstance(node, dict):
            return False
    if path[-1] in node:
        return False
    node[path[-1]] = kind
    return True


def _struct(tree: dict, name: str) -> type:
    """A Struct of ``tree``: every name optional (null or missing: None), what it does not name
    skipped. Attributes are f0, f1...: a JSON name need not be a Python identifier."""
    fields, rename = [], {}
    for i, (key, kind) in enumerate(tree.items()):
        attribute = f"f{i}"
        rename[attribute] = key
        kind = _struct(kind, f"{name}_{attribute}") if isinstance(kind, dict) else kind
        fields.append((attribute, kind | None, None))
    return msgspec.defstruct(name, fields, rename=rename)


def _getter(root: type, path: tuple[str, ...]):
    """The function reading the value at ``path`` off a decoded ``root``, None where a step is null."""
    attributes = []
    struct = root
    for name in path:
        field = next(field for field in msgspec.structs.fields(struct) if field.encode_name == name)
        attributes.append(field.name)
        struct = next((t for t in getattr(field.type, "__args__", ()) if isinstance(t, type)), None)
    if len(attributes) == 1:
        return operator.attrgetter(attributes[0])

    def get(value):
        for attribute in attributes:
            value = getattr(value, attribute)
            if value is None:
                return None
        return value

    return get
