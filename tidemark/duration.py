"""Durations as people write them in configuration ("30s", "10m", "7d"), held as milliseconds."""

import re

_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d)\s*$")


def parse_duration_ms(text: object) -> int:
    """Parse '<whole number><unit>' with unit ms, s, m, h or d into milliseconds (>= 0).

    Raises ValueError with the accepted forms when the text is not one of them; negative
    durations are rejected here because no tolerance in tidemark can be negative.
    """
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        raise ValueError(f"expected a duration like '30s', '10m', '7d', got {text!r}")
    if isinstance(text, int) or text.strip().isdigit():
        raise ValueError(f"a bare number is ambiguous; write it with a unit, e.g. '{text}s' or '{text}ms'")
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"expected a non-negative duration like '500ms', '30s', '10m', '2h', '7d', got {text!r}")
    amount, unit = match.groups()
    return int(amount) * _UNIT_MS[unit]


def format_duration_ms(ms: int) -> str:
    """The shortest exact spelling of a millisecond duration, for messages and reports."""
    for unit in ("d", "h", "m", "s"):
        if ms and ms % _UNIT_MS[unit] == 0:
            return f"{ms // _UNIT_MS[unit]}{unit}"
    return f"{ms}ms"
