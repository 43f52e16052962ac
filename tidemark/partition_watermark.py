"""The watermark of one source partition under bounded out-of-orderness.

Contract: W_p = (max event time admitted from p) − max_out_of_orderness − 1 ms, and it never
decreases. It states: no record with event time <= W_p will follow from p, provided p's records
are at most max_out_of_orderness behind the largest event time before them. A partition's
watermark may also be raised by what the log's time index proves about records not read yet
(see ``on_next_record_at_least``). Times are ms since the epoch, UTC; ``None`` means no
watermark yet (nothing is known about p's event time).
"""

from __future__ import annotations


class PartitionWatermark:
    def __init__(self, max_out_of_orderness_ms: int, current_ms: int | None = None):
        if max_out_of_orderness_ms < 0:
            raise ValueError(f"max_out_of_orderness_ms must be >= 0, got {max_out_of_orderness_ms}")
        self._bound_ms = max_out_of_orderness_ms
        self._current_ms = current_ms

    @property
    def current_ms(self) -> int | None:
        return self._current_ms

    def on_event(self, event_time_ms: int) -> None:
        """A valid record with this event time was admitted (a batch may pass only its maximum)."""
        self._advance(event_time_ms - self._bound_ms - 1)

    def on_next_record_at_least(self, log_time_ms: int) -> None:
        """The next unread record of p has a timestamp >= ``log_time_ms``.

        Every record after it is at most max_out_of_orderness behind it, so none will have an
        event time <= log_time_ms − bound − 1: the same promise as having admitted that record.
        Valid where the log timestamp is the event time.
        """
        self._advance(log_time_ms - self._bound_ms - 1)

    def on_watermark(self, watermark_ms: int | None) -> None:
        """Raise to a watermark already computed for p (restored state, or a batch's result)."""
        if watermark_ms is not None:
            self._advance(watermark_ms)

    def _advance(self, candidate_ms: int) -> None:
        if self._current_ms is None or candidate_ms > self._current_ms:
            self._current_ms = candidate_ms
