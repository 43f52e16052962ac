"""A backfill into a shadow table set compared with what live persisted, per partition and hour.

The daily reconciliation backfills the previous day from the log and compares the two
``events`` tables over the backfill's offset ranges: per (partition, event hour) the record
counts and the (partition, offset) sets. A record only the backfill holds is *missing in live*
(a hole: the recovery DAG replays it) unless live holds it in ``late`` or ``quarantine``
(*routed differently*); one only live holds is *extra in live*. Any of them is a difference and
fails the run: a backfill that disagrees with live is worse than none.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from tidemark.event_time_text import format_event_time, parse_event_time
from tidemark.offset_coverage import OffsetRange
from tidemark.recovery_request import RecoveryRequest


class HourComparison(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One (partition, event hour [hour, hour+1h)): records in live's events and the shadow's, and
    how they differ. ``hour`` is ISO-8601 UTC text with milliseconds ("2026-11-21T10:00:00.000Z").
    The same value in the comparison job, in BackfillResult.comparison (its JSON is this Struct's)
    and in the backfill DAG's verdict and the CLI, which decode it by this type."""

    partition: int
    hour: str
    live: int
    shadow: int
    missing_in_live: int = 0
    extra_in_live: int = 0
    routed_differently: int = 0

    @classmethod
    def of_hour_ms(cls, partition: int, hour_ms: int, live: int, shadow: int, **differences: int) -> HourComparison:
        """The comparison of the hour starting at ``hour_ms`` (ms since the epoch, UTC)."""
        return cls(partition, format_event_time(hour_ms), live, shadow, **differences)

    @property
    def hour_ms(self) -> int:
        """The hour's start, ms since the epoch (UTC)."""
        return parse_event_time(self.hour)

    @property
    def differs(self) -> bool:
        return bool(self.missing_in_live or self.extra_in_live or self.routed_differently) or self.live != self.shadow

    def describe(self) -> str:
        text = f"partition {self.partition}, hour {self.hour}: live {self.live}, backfill {self.shadow}"
        details = [
            f"{count} {what}"
            for count, what in (
                (self.missing_in_live, "missing in live"),
                (self.extra_in_live, "only in live"),
                (self.routed_differently, "in live's late or quarantine table instead"),
            )
            if count
        ]
        return text + (f" ({', '.join(details)})" if details else "")


class ComparisonWithLive(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A shadow set compared with live (``Reconciliation.comparison()``, BackfillResult.comparison):
    the partition-hours compared, the records on each side, the partition-hours that differ, and
    the recovery of what live lacks (one request per partition, triggered by the backfill DAG)."""

    compared_hours: int
    records_live: int
    records_shadow: int
    differing: tuple[HourComparison, ...]
    recovery_requests: tuple[RecoveryRequest, ...]


@dataclass(frozen=True)
class Reconciliation:
    """Every compared (partition, hour), and per partition the offset ranges missing in live."""

    stream: str
    hours: tuple[HourComparison, ...]
    missing_in_live: dict[int, tuple[OffsetRange, ...]]

    @property
    def differing(self) -> list[HourComparison]:
        return [hour for hour in self.hours if hour.differs]

    def recovery_requests(self) -> list[RecoveryRequest]:
        """One request per partition with records missing in live: those offsets, replayed."""
        requests = []
        for partition, ranges in sorted(self.missing_in_live.items()):
            if not ranges:
                continue
            hours = sorted({h.hour_ms for h in self.differing if h.partition == partition and h.missing_in_live})
            count = sum(h.missing_in_live for h in self.differing if h.partition == partition)
            reason = f"RECONCILE: {count} records the log holds are missing in live's events, hours " + ", ".join(
                format_event_time(h) for h in hours
            )
            requests.append(RecoveryRequest(self.stream, partition, ranges, reason[:500]))
        return requests

    def comparison(self) -> ComparisonWithLive:
        """What the backfill's result says of this reconciliation."""
        return ComparisonWithLive(
            compared_hours=len(self.hours),
            records_live=sum(h.live for h in self.hours),
            records_shadow=sum(h.shadow for h in self.hours),
            differing=tuple(self.differing),
            recovery_requests=tuple(self.recovery_requests()),
        )
