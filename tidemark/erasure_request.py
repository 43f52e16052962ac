"""What an erasure removes: one stream's records that a predicate names, asked by someone.

One typed value crosses every boundary (tidemark.request_value): the erasure DAG's validate task,
EraseOperator and the erasure job's ``--request`` argument carry an ``ErasureRequest`` as JSON::

    {"stream": "telemetry", "where": "device_id = 'scooter-7'", "requested_by": "ana",
     "reason": "GDPR request 2026-118"}

``where`` is checked against the stream's payload columns by tidemark.erasure_predicate before
any work: a form or a command line with a predicate that does not parse fails naming the param.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from tidemark.erasure_predicate import ErasurePredicate, ErasurePredicateError, parse_predicate
from tidemark.param_error import ParamError
from tidemark.request_value import RequestValue
from tidemark.stream_config import StreamConfig


class ErasureRequestError(ParamError):
    """An erasure param is missing or wrong; the message starts with "param '<name>': "."""


class ErasureRequest(RequestValue, frozen=True, forbid_unknown_fields=True):
    """Erase ``stream``'s records ``where`` holds (tidemark.erasure_predicate), at the request of
    ``requested_by`` (a person's name, kept in the erasures table), for ``reason`` (free text)."""

    error_type: ClassVar[type[ParamError]] = ErasureRequestError
    kind: ClassVar[str] = "erasure request"

    stream: str
    where: str
    requested_by: str
    reason: str = ""

    def __post_init__(self) -> None:
        if not self.requested_by.strip():
            raise ValueError("requested_by: say who asked for the erasure (it is kept with it)")

    def predicate(self, stream: StreamConfig) -> ErasurePredicate:
        """``where`` read against ``stream``'s payload columns; ErasureRequestError naming ``where``."""
        try:
            return parse_predicate(self.where, stream.payload.columns)
        except ErasurePredicateError as error:
            raise ErasureRequestError("where", str(error)) from None


def parse_erase_form(params: Mapping[str, Any], streams: Mapping[str, StreamConfig]) -> ErasureRequest:
    """Validate what a person typed into an ErasureRequest; ErasureRequestError naming the param."""
    name = params.get("stream")
    if not isinstance(name, str) or name not in streams:
        raise ErasureRequestError(
            "stream", f"unknown stream {name!r}; configured streams: {', '.join(sorted(streams)) or '(none)'}"
        )
    where = params.get("where")
    if not isinstance(where, str) or not where.strip():
        raise ErasureRequestError("where", "a predicate on the stream's payload columns, e.g. device_id = 'scooter-7'")
    by = params.get("requested_by")
    if not isinstance(by, str) or not by.strip():
        raise ErasureRequestError("requested_by", "who asked for the erasure (a name, kept with it)")
    reason = params.get("reason") or ""
    if not isinstance(reason, str):
        raise ErasureRequestError("reason", f"free text, got {reason!r}")
    request = ErasureRequest(name, where.strip(), by.strip(), reason.strip())
    request.predicate(streams[name])  # fails naming "where" now, before any work
    return request
