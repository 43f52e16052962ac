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

from tidemark.event_time_text import format_event_time, parse_event_time
from tidemark.offset_coverage import OffsetRange
from tidemark.recovery_request import RecoveryRequest


@dataclass(frozen=True)
class HourComparison:
    """One (partition, event hour): records in live's events and the shadow's, and how they differ."""

    partition: int
    hour_ms: int
    live: int
    shadow: int
    missing_in_live: int = 0
    extra_in_live: int = 0
    routed_differently: int = 0

    @property
    def differs(self) -> bool:
        return bool(self.missing_in_live or self.extra_in_live or self.routed_differently) or self.live != self.shadow

    def describe(self) -> str:
        text = f"partition {self.partition}, hour {format_event_time(self.hour_ms)}: live {self.live}, backfill {self.shadow}"
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

    def to_json(self) -> dict:
        return {
            "partition": self.partition,
            "hour": format_event_time(self.hour_ms),
            "live": self.live,
            "shadow": self.shadow,
            "missing_in_live": self.missing_in_live,
            "extra_in_live": self.extra_in_live,
            "routed_differently": self.routed_differently,
        }

    @classmethod
    def from_json(cls, data: dict) -> HourComparison:
        return cls(
            data["partition"],
            parse_event_time(data["hour"]),
            data["live"],
            data["shadow"],
            data["missing_in_live"],
            data["extra_in_live"],
            data["routed_differently"],
        )


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

    def to_json(self) -> dict:
        return {
            "compared_hours": len(self.hours),
            "records_live": sum(h.live for h in self.hours),
            "records_shadow": sum(h.shadow for h in self.hours),
            "differing": [h.to_json() for h in self.differing],
            "recovery_requests": [r.to_json() for r in self.recovery_requests()],
        }
