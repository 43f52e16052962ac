"""A job's result that crosses processes as one value: the file the job writes (``encode``), the
task's XCom (``to_json``), read back with the value's own type (``decode``, ``from_json``), each
failing with msgspec.ValidationError naming the field when the data is not one. Recovery and
re-drive results are such values (tidemark.recovery_result, tidemark.redrive_result)."""

from __future__ import annotations

from typing import Any, Self

import msgspec


class ResultValue(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    def to_json(self) -> dict:
        """The JSON-able mapping: the task's XCom."""
        # Through JSON, so sequences come back as lists: exactly what a reader of the JSON sees.
        return msgspec.json.decode(msgspec.json.encode(self))

    def encode(self) -> bytes:
        """The result file's bytes: indented JSON ending in a newline."""
        return msgspec.json.format(msgspec.json.encode(self), indent=2) + b"\n"

    @classmethod
    def decode(cls, data: str | bytes) -> Self:
        """The result from its file."""
        return msgspec.json.decode(data, type=cls)

    @classmethod
    def from_json(cls, value: Any) -> Self:
        """The result from its JSON-able mapping (``to_json``)."""
        return msgspec.convert(value, type=cls)
