"""Offline devices: the rule, applied to one device's records in event-time order.

A device is offline once ``offline_after`` has passed since its last record, and online again at
its next record. For two consecutive records of a device at t1 < t2:

    t2 - t1 >  offline_after   the device was offline over [t1 + offline_after, t2)
    t2 - t1 <= offline_after   it stayed online (a record exactly offline_after later counts in time)

so offline_at = t1 + offline_after and online_at = t2. Records at the same instant are one
observation. Times are ms since the epoch, UTC.

What can be reported depends on how far the records are known. With watermark W (no record at or
before W will follow), a period has started once offline_at <= W, and has ended once its
online_at <= W; until then it is reported open (online_at None). ``OfflineRule.advance`` takes the
records at or before W and handles them and the offline deadline in event-time order, so its
result depends only on the records and on W, never on how the records were batched.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# The detector's output table (spark_jobs/offline_devices/job.py), as (name, Spark SQL type) pairs.
# Key (device_id, offline_at); online_at is null while the device is still offline.
OFFLINE_PERIODS_COLUMNS = [("device_id", "STRING"), ("offline_at", "TIMESTAMP"), ("online_at", "TIMESTAMP")]


@dataclass(frozen=True)
class OfflinePeriod:
    """The device was offline from ``offline_at_ms``; back at ``online_at_ms`` (None: still offline)."""

    offline_at_ms: int
    online_at_ms: int | None


@dataclass(frozen=True)
class DeviceTimeline:
    """What the rule keeps of one device between watermarks: its last record handled and, while it
    is offline, when that began. A device before its first record has neither."""

    last_record_ms: int | None = None
    offline_at_ms: int | None = None

    def deadline_ms(self, offline_after_ms: int) -> int | None:
        """When the device goes offline unless a record comes first; None while offline or unseen."""
        if self.last_record_ms is None or self.offline_at_ms is not None:
            return None
        return self.last_record_ms + offline_after_ms


class OfflineRule:
    """Applies the rule up to a watermark. ``offline_after_ms`` > 0.

    ``report_from_ms`` is the warm-up bound of a backfill over [start, end): records from
    start - offline_after on are handled (the records that decide every period starting at or
    after start), and periods that went offline before start are not reported, so a backfill
    reports exactly what the live detector reports for the same range.
    """

    def __init__(self, offline_after_ms: int, report_from_ms: int | None = None):
        if offline_after_ms <= 0:
            raise ValueError(f"offline_after_ms must be > 0, got {offline_after_ms}")
        self.offline_after_ms = offline_after_ms
        self.report_from_ms = report_from_ms

    def advance(
        self, timeline: DeviceTimeline, records_ms: Iterable[int], watermark_ms: int
    ) -> tuple[DeviceTimeline, list[OfflinePeriod]]:
        """Handle ``records_ms`` and the offline deadline in event-time order, up to ``watermark_ms``.

        Contract: ``records_ms`` are all the device's records at or before ``watermark_ms`` not
        handled before (any order, duplicates allowed), all later than the timeline's last record;
        no record at or before ``watermark_ms`` follows. A record at the deadline's very instant
        comes before the deadline. Returns the new timeline and the periods that began or ended in
        this call, each once, with its end if known (a period that began and ended within the
        call comes out once, ended).
        """
        last, offline_at = timeline.last_record_ms, timeline.offline_at_ms
        periods: dict[int, int | None] = {}
        for record_ms in sorted(set(records_ms)):
            if record_ms > watermark_ms:
                raise ValueError(f"record at {record_ms} is after the watermark {watermark_ms}: it is not due yet")
            if last is not None and record_ms <= last:
                raise ValueError(f"record at {record_ms} is not after the last record handled ({last})")
            if offline_at is None and last is not None and record_ms - last > self.offline_after_ms:
                offline_at = last + self.offline_after_ms  # the deadline passed before this record
            if offline_at is not None:
                periods[offline_at] = record_ms
                offline_at = None
            last = record_ms
        if offline_at is None and last is not None and last + self.offline_after_ms <= watermark_ms:
            offline_at = last + self.offline_after_ms
            periods[offline_at] = None
        reported = [
            OfflinePeriod(start, end)
            for start, end in sorted(periods.items())
            if self.report_from_ms is None or start >= self.report_from_ms
        ]
        return DeviceTimeline(last, offline_at), reported
