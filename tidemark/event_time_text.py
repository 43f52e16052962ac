"""Event times as the telemetry payload spells them: ISO-8601, UTC, milliseconds, 'Z'."""

import time
from datetime import UTC, datetime, timedelta
from functools import lru_cache


def format_event_time(epoch_ms: int) -> str:
    """ms since the epoch (UTC) → '2026-11-22T08:59:59.999Z'."""
    seconds, millis = divmod(epoch_ms, 1000)
    return f"{_second_prefix(seconds)}.{millis:03d}Z"


def format_optional_event_time(epoch_ms: int | None) -> str | None:
    """Like format_event_time, with None (no event time, no watermark yet) kept as None."""
    return None if epoch_ms is None else format_event_time(epoch_ms)


# Formatting is on the hot path (one call per record, millions per backlog). Records of all
# partitions arrive within the disorder bound of each other, so a few thousand recent seconds
# cover nearly every call.
@lru_cache(maxsize=4096)
def _second_prefix(epoch_seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch_seconds))


def parse_event_time(text: str) -> int:
    """ISO-8601 with an explicit UTC offset → ms since the epoch (UTC).

    A time without an offset is refused: guessing UTC for someone's local time would shift a
    whole backlog by hours without anyone noticing. Raises ValueError saying what to write.
    """
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO-8601 time; write e.g. 2026-11-22T09:00:00Z") from None
    if parsed.tzinfo is None:
        raise ValueError(f"{text!r} has no UTC offset; write e.g. {text}Z")
    return (parsed - _EPOCH) // _MILLISECOND


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)  # made once: this runs once per record
