"""The offline-device detector's stateful processor, for ``transformWithStateInPandas``
(timeMode "EventTime", grouped by device).

Buffered, so that the result does not depend on batching. Spark handles a micro-batch's input rows
first and its expired timers after, with the watermark of the previous batch; a processor that
acted on each record as it arrived would let a record at 18:00:32 push a device's offline deadline
of 18:00:25 back before that deadline could fire, whenever both land in one batch (a backfill),
and fire it when they do not (live). So:

- ``handleInputRows`` only buffers: it appends each record's time to the device's pending list
  and makes sure a timer is set at or before the earliest pending time. It emits nothing.
- ``handleExpiredTimer`` takes every pending record at or before the watermark W, and the
  device's offline deadline, and handles them in event-time order (``tidemark.offline_detection``),
  all at the first timer of the device that fires; later timers of the same batch find nothing
  due. So the order in which Spark fires timers does not matter either. Then it sets one timer: at
  the earliest of the next pending record and the deadline.

One timer per device at its next due time, rather than one per record: it fires at the same
watermark the first per-record timer would, and a backfill slice of hours of records costs one
timer per device instead of one per record.

Output rows (device_id, offline_at_ms, online_at_ms): a period when it begins (online_at_ms
null) and again when it ends; one that begins and ends at the same watermark comes out once,
ended. The slice-end marker rows of the source (device_id null) only move the watermark and are
ignored here. Times are ms since the epoch, UTC.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.sql.streaming.stateful_processor import StatefulProcessor

from tidemark.offline_detection import DeviceTimeline, OfflinePeriod, OfflineRule

OUTPUT_SCHEMA = "device_id STRING, offline_at_ms BIGINT, online_at_ms BIGINT"


class OfflineDeviceProcessor(StatefulProcessor):
    """State per device: ``pending`` (times of records not handled yet) and ``timeline`` (last
    record handled, start of the open offline period). See ``OfflineRule`` for the rule and for
    ``report_from_ms`` (a backfill's warm-up)."""

    def __init__(self, offline_after_ms: int, report_from_ms: int | None = None):
        self._offline_after_ms = offline_after_ms
        self._report_from_ms = report_from_ms

    def init(self, handle) -> None:
        self._handle = handle
        self._rule = OfflineRule(self._offline_after_ms, self._report_from_ms)
        self._pending = handle.getListState("pending", "event_time_ms LONG")
        self._timeline = handle.getValueState("timeline", "last_record_ms LONG, offline_at_ms LONG")

    def handleInputRows(self, key: Any, rows: Iterator, timerValues) -> Iterator:
        (device,) = key
        if device is None:
            return iter([])  # slice-end markers: they only moved the watermark
        times = [int(t) for frame in rows for t in frame["event_time_ms"]]
        if times:
            self._pending.appendList([(t,) for t in times])
            earliest = min(times)
            timers = list(self._handle.listTimers())
            if not timers or earliest < min(timers):
                self._handle.registerTimer(earliest)
        return iter([])

    def handleExpiredTimer(self, key: Any, timerValues, expiredTimerInfo) -> Iterator:
        (device,) = key
        watermark = timerValues.getCurrentWatermarkInMs()
        pending = [t for (t,) in self._pending.get()]
        due = [t for t in pending if t <= watermark]
        later = [t for t in pending if t > watermark]
        timeline, periods = self._rule.advance(self._load_timeline(), due, watermark)
        if due:
            if later:
                self._pending.put([(t,) for t in later])
            else:
                self._pending.clear()
        self._timeline.update((timeline.last_record_ms, timeline.offline_at_ms))
        self._set_next_timer(watermark, later, timeline)
        if periods:
            yield _frame(device, periods)

    def _load_timeline(self) -> DeviceTimeline:
        # exists() first: get() of a missing value makes Spark log a warning per device.
        return DeviceTimeline(*self._timeline.get()) if self._timeline.exists() else DeviceTimeline()

    def _set_next_timer(self, watermark: int, later: list[int], timeline: DeviceTimeline) -> None:
        """Keep exactly one timer after ``watermark``: the device's next due time, if any.
        Timers at or before the watermark are Spark's to fire and remove."""
        candidates = [*later, timeline.deadline_ms(self._offline_after_ms)]
        due_next = min((t for t in candidates if t is not None), default=None)
        registered = [t for t in self._handle.listTimers() if t > watermark]
        for stale in registered:
            if stale != due_next:
                self._handle.deleteTimer(stale)
        if due_next is not None and due_next not in registered:
            self._handle.registerTimer(due_next)

    def close(self) -> None:
        """Required by StatefulProcessor; the state lives in Spark's store, nothing to release."""


def _frame(device: str, periods: list[OfflinePeriod]):
    import pandas as pd

    return pd.DataFrame(
        {
            "device_id": [device] * len(periods),
            "offline_at_ms": pd.array([p.offline_at_ms for p in periods], dtype="Int64"),
            "online_at_ms": pd.array([p.online_at_ms for p in periods], dtype="Int64"),
        }
    )
