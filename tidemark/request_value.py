"""A request that crosses processes as one value: the quality run's XCom, a DAG run's conf, the
job's ``--request`` argument. Recovery and backfill requests are such values
(tidemark.recovery_request, tidemark.backfill_request).

A subclass names its ParamError (``error_type``) and what it is called (``kind``); every way in
fails with that error, naming the field that is wrong, never with a bare decoding error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar, Self

import msgspec

from tidemark.param_error import ParamError

# msgspec names the field it refused in its message only: "... - at `$.partition`" or
# "Object missing required field `ranges`".
_FIELD_IN_ERROR = re.compile(r"`\$\.(\w+)|field `(\w+)`")


class RequestValue(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    error_type: ClassVar[type[ParamError]] = ParamError
    kind: ClassVar[str] = "request"

    def to_json(self) -> dict:
        """The JSON-able mapping: XCom, the TriggerDagRun conf, the quality result."""
        # Through JSON, so sequences come back as lists: exactly what a reader of the JSON sees.
        return msgspec.json.decode(msgspec.json.encode(self))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        """The request from its mapping; ``error_type`` naming the field that is wrong."""
        try:
            return msgspec.convert(dict(data), cls)
        except msgspec.ValidationError as error:
            raise cls.field_error(error) from None

    def encode(self) -> str:
        """The request as JSON text: the job's ``--request`` argument."""
        return msgspec.json.encode(self).decode()

    @classmethod
    def decode(cls, text: str | bytes) -> Self:
        """The request from ``encode``'s text; ``error_type`` naming the field that is wrong."""
        try:
            return msgspec.json.decode(text, type=cls)
        except msgspec.ValidationError as error:
            raise cls.field_error(error) from None
        except msgspec.DecodeError as error:
            raise cls.error_type("request", f"not a {cls.kind}'s JSON: {error}") from None

    @classmethod
    def field_error(cls, error: msgspec.ValidationError) -> ParamError:
        """``error`` as ``error_type``, naming the field msgspec refused (else "request")."""
        named = _FIELD_IN_ERROR.search(str(error))
        field = next((g for g in named.groups() if g), "request") if named else "request"
        return cls.error_type(field, str(error))
