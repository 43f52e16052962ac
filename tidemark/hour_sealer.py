"""Sealing of event-time hours.

Hours are aligned to the epoch, start inclusive, end exclusive: 08:59:59.999 belongs to
[08:00, 09:00), 09:00:00.000 does not. Hour [H, H+1h) is sealed once G >= H + 1h +
allowed_lateness: from then on any record of that hour is LATE, so the hour's content is final
and its checks can run.
"""

from __future__ import annotations

HOUR_MS = 3_600_000


def hour_start_ms(event_time_ms: int) -> int:
    """The start of the epoch-aligned hour holding ``event_time_ms`` (floor, also before 1970)."""
    return event_time_ms - event_time_ms % HOUR_MS


class HourSealer:
    def __init__(self, allowed_lateness_ms: int):
        self._allowed_lateness_ms = allowed_lateness_ms

    def is_sealed(self, hour_ms: int, global_watermark_ms: int | None) -> bool:
        return global_watermark_ms is not None and global_watermark_ms >= hour_ms + HOUR_MS + self._allowed_lateness_ms

    def newly_sealed(self, previous_ms: int | None, current_ms: int | None) -> list[int]:
        """Starts of the hours sealed by G moving from ``previous_ms`` to ``current_ms``, ascending.

        With no previous watermark (the stream's first), sealing starts at the hour before the
        first one left open, so the hours before the stream's data are not listed one by one.
        """
        if current_ms is None:
            return []
        last = hour_start_ms(current_ms - self._allowed_lateness_ms) - HOUR_MS  # last sealed hour
        if previous_ms is None:
            first = last
        else:
            first = hour_start_ms(previous_ms - self._allowed_lateness_ms)  # first hour still open then
        return list(range(first, last + 1, HOUR_MS)) if last >= first else []

    def newly_sealed_by_steps(self, previous_ms: int | None, step_watermarks_ms: list[int | None]) -> list[int]:
        """Starts of the hours sealed by a batch of aligned steps, G moving from ``previous_ms``
        through each step's G in turn (ascending): the same hours as one batch per step, also
        when the batch holds the stream's first G."""
        sealed: list[int] = []
        for current_ms in step_watermarks_ms:
            sealed += self.newly_sealed(previous_ms, current_ms)
            previous_ms = current_ms if current_ms is not None else previous_ms
        return sealed
