"""Which event-time window a demo's backlog covers: the hours before now, but never before the
stream's global watermark G. A backlog over hours a previous demo already persisted would meet
a G past them, and its records would go to the late table (31,502 of 61,577 did, the first
time someone ran the demo twice); starting at G, every record is at or after G."""

from __future__ import annotations

from dataclasses import dataclass

from tidemark.event_time_text import format_event_time

MINUTE_MS = 60_000
HOUR_MS = 60 * MINUTE_MS


@dataclass(frozen=True)
class DemoBacklog:
    start_ms: int  # inclusive, ms UTC
    end_ms: int  # exclusive, ms UTC, on a whole minute
    note: str | None  # for the person running the demo, when the window was shortened

    @property
    def hours(self) -> float:
        return (self.end_ms - self.start_ms) / HOUR_MS


def demo_backlog(now_ms: int, hours: float, global_watermark_ms: int | None) -> DemoBacklog | None:
    """``hours`` before now (floored to the minute), starting no earlier than the minute after
    G; None when less than a minute is left after G (the note to print is then the caller's)."""
    end = now_ms // MINUTE_MS * MINUTE_MS
    start = end - round(hours * HOUR_MS)
    if global_watermark_ms is None or global_watermark_ms < start:
        return DemoBacklog(start, end, None)
    after_g = (global_watermark_ms // MINUTE_MS + 1) * MINUTE_MS
    if end - after_g < MINUTE_MS:
        return None
    note = (
        f"the stream's global watermark is already at {format_event_time(global_watermark_ms)} (an earlier demo "
        f"persisted up to there): this backlog covers {format_event_time(after_g)} .. {format_event_time(end)} only, "
        f"so that none of its records is late"
    )
    return DemoBacklog(after_g, end, note)
