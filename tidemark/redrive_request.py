"""What a quarantine re-drive moves: one stream's quarantined records of one reason, optionally
only those whose log time falls in an hour window.

One typed value crosses every boundary, as a recovery request does (tidemark.request_value): the
redrive DAG's validate task, RedriveOperator and the redrive job's ``--request`` argument carry
a ``RedriveRequest`` as its JSON::

    {"stream": "telemetry", "reason": "unknown_schema_id",
     "hours_from": "2026-11-28T05:00:00.000Z", "hours_to": "2026-11-28T08:00:00.000Z"}

People fill the DAG's params form (and ``tidemark redrive``) with the hours as text,
"2026-11-28T05:00Z..2026-11-28T08:00Z" (whole hours, UTC offset written); ``parse_redrive_form``
turns that into the same value once, failing naming the param. The hours select by the
record's log time (Kafka's record timestamp, Kinesis's arrival): a quarantined record has no
event time anyone can trust, and the log time is what a person sees next to it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from tidemark.event_time_text import format_event_time, parse_event_time
from tidemark.param_error import ParamError
from tidemark.request_value import RequestValue
from tidemark.stream_config import StreamConfig

HOUR_MS = 3_600_000
_REASON = re.compile(r"^[a-z][a-z_]{0,63}$")


class RedriveRequestError(ParamError):
    """A redrive param is missing or wrong; the message starts with "param '<name>': "."""


class RedriveRequest(RequestValue, frozen=True, forbid_unknown_fields=True):
    """Re-drive ``stream``'s quarantined records of ``reason`` (a reason code, as in the
    quarantine table's ``reason`` column), those with a log time in [``hours_from``,
    ``hours_to``) when given (ISO-8601 UTC, whole hours)."""

    error_type: ClassVar[type[ParamError]] = RedriveRequestError
    kind: ClassVar[str] = "redrive request"

    stream: str
    reason: str
    hours_from: str | None = None
    hours_to: str | None = None

    def __post_init__(self) -> None:
        if not _REASON.match(self.reason):
            raise ValueError(f"reason {self.reason!r}: a quarantine reason code, e.g. unknown_schema_id")
        if (self.hours_from is None) != (self.hours_to is None):
            raise ValueError("hours_from and hours_to come together, or neither")
        if self.hours_from is not None and self.window_ms()[0] >= self.window_ms()[1]:
            raise ValueError(f"hours {self.hours_from}..{self.hours_to}: the window is empty")

    def window_ms(self) -> tuple[int, int] | None:
        """[from, to) in ms since the epoch (UTC), or None: every hour."""
        if self.hours_from is None or self.hours_to is None:
            return None
        return parse_event_time(self.hours_from), parse_event_time(self.hours_to)


def parse_redrive_form(params: Mapping[str, Any], streams: Mapping[str, StreamConfig]) -> RedriveRequest:
    """Validate what a person typed into a RedriveRequest; RedriveRequestError naming the param.

    ``stream``: a configured stream's name. ``reason``: a reason code (lower case and ``_``).
    ``hours``: empty (every hour) or "FROM..TO", each an ISO-8601 time with a UTC offset on a
    whole hour, FROM before TO.
    """
    name = params.get("stream")
    if not isinstance(name, str) or name not in streams:
        raise RedriveRequestError(
            "stream", f"unknown stream {name!r}; configured streams: {', '.join(sorted(streams)) or '(none)'}"
        )
    reason = params.get("reason")
    if not isinstance(reason, str) or not _REASON.match(reason.strip()):
        raise RedriveRequestError(
            "reason", f"a quarantine reason code (lower case letters and _), e.g. unknown_schema_id; got {reason!r}"
        )
    hours = params.get("hours") or ""
    if not isinstance(hours, str):
        raise RedriveRequestError("hours", f'"FROM..TO" or empty, got {hours!r}')
    window: tuple[str | None, str | None] = (None, None)
    if hours.strip():
        window = _hours(hours)
    return RedriveRequest(name, reason.strip(), *window)


def _hours(text: str) -> tuple[str, str]:
    parts = text.split("..")
    if len(parts) != 2:
        raise RedriveRequestError("hours", f'"FROM..TO", e.g. 2026-11-28T05:00Z..2026-11-28T08:00Z; got {text!r}')
    bounds = []
    for part in parts:
        try:
            ms = parse_event_time(part.strip())
        except ValueError as error:
            raise RedriveRequestError("hours", f"{part.strip()!r}: {error}") from None
        if ms % HOUR_MS:
            raise RedriveRequestError("hours", f"{part.strip()!r} is not on a whole hour")
        bounds.append(ms)
    if bounds[0] >= bounds[1]:
        raise RedriveRequestError("hours", f"{text!r}: FROM must be before TO")
    return format_event_time(bounds[0]), format_event_time(bounds[1])
