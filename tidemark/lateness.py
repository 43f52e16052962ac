"""Lateness of a record against the global watermark G.

ON_TIME: event time >= G. WITHIN_LATENESS: G − allowed_lateness <= event time < G; persisted
like any record (its hour is marked amended if it was already sealed). LATE: event time <
G − allowed_lateness; routed to the late table with the watermark it met, never dropped.
"""

from __future__ import annotations

from enum import Enum


class Lateness(str, Enum):
    ON_TIME = "on_time"
    WITHIN_LATENESS = "within_lateness"
    LATE = "late"


class LatenessClassifier:
    def __init__(self, allowed_lateness_ms: int):
        self._allowed_lateness_ms = allowed_lateness_ms

    def late_before_ms(self, global_watermark_ms: int | None) -> int | None:
        """Event times below this are LATE under ``global_watermark_ms`` (None: nothing is late)."""
        return None if global_watermark_ms is None else global_watermark_ms - self._allowed_lateness_ms

    def classify(self, event_time_ms: int, global_watermark_ms: int | None) -> Lateness:
        if global_watermark_ms is None or event_time_ms >= global_watermark_ms:
            return Lateness.ON_TIME
        if event_time_ms >= global_watermark_ms - self._allowed_lateness_ms:
            return Lateness.WITHIN_LATENESS
        return Lateness.LATE
