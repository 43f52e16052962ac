"""Sets of offsets of one partition as sorted, disjoint spans (tidemark.offset_coverage.OffsetRange)."""

from __future__ import annotations

from collections.abc import Iterable

from tidemark.offset_coverage import OffsetRange


def offsets_in(spans: Iterable[OffsetRange]) -> int:
    return sum(span.size for span in spans)


def spans_json(spans: Iterable[OffsetRange]) -> list[list[int]]:
    """[[start, end], ...]: the shape the recovery DAG's ``ranges`` param takes."""
    return [[span.start, span.end] for span in spans]


def spans_text(spans: Iterable[OffsetRange], limit: int = 5) -> str:
    """'[10, 12), [40, 41)' with at most ``limit`` spans shown and the rest counted."""
    spans = list(spans)
    shown = ", ".join(str(span) for span in spans[:limit])
    return shown if len(spans) <= limit else f"{shown} and {len(spans) - limit} more"
