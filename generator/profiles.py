"""Per-partition rate profiles and the deterministic event stream of one partition.

A profile says when records are due ("nominal times"); ``partition_events`` turns those into
telemetry events whose event time is the nominal time minus a random disorder. Pure: no Kafka,
no clock. Times are ms since the epoch, UTC.

    steady   720 records per hour, one every 5 s
    slow     exactly 1 record per hour, at minute 30 (not scaled by rate_scale)
    heavy    18,000 records per hour, one every 200 ms
    bursty   3 bursts per hour (minutes 5, 25, 45), each 600 records packed into 60 s
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from generator.scooters import ScooterFleet

MINUTE_MS = 60_000
HOUR_MS = 3_600_000


@dataclass(frozen=True)
class RateProfile:
    """Records due in repeating periods aligned to the epoch.

    Each period of ``period_ms`` holds ``records_per_period`` records spread evenly over
    ``active_ms``, starting ``phase_ms`` into the period. ``rate_scale`` multiplies the records
    per period (at least one remains) unless ``scales`` is False. Because periods are aligned to
    the epoch, a window of whole periods always holds exactly the profile's count, whatever the
    window's start.
    """

    name: str
    records_per_period: int
    period_ms: int
    active_ms: int
    phase_ms: int = 0
    scales: bool = True

    def __post_init__(self):
        # Nominal times must rise monotonically, or the disorder bound would not hold.
        if not (self.active_ms > 0 and self.phase_ms >= 0 and self.phase_ms + self.active_ms <= self.period_ms):
            raise ValueError(f"profile {self.name!r}: the active part must fit inside the period")

    def records_in_period(self, rate_scale: float = 1.0) -> int:
        if not self.scales:
            return self.records_per_period
        return max(1, round(self.records_per_period * rate_scale))

    def records_per_hour(self, rate_scale: float = 1.0) -> float:
        return self.records_in_period(rate_scale) * HOUR_MS / self.period_ms

    def nominal_times(self, start_ms: int, end_ms: int, rate_scale: float = 1.0) -> Iterator[int]:
        """The times records are due in [start_ms, end_ms), ascending (equal times are possible)."""
        count = self.records_in_period(rate_scale)
        period = (start_ms - self.phase_ms) // self.period_ms
        while True:
            base = period * self.period_ms + self.phase_ms
            if base >= end_ms:
                return
            # Skip straight to the first record at or after start_ms: ceil((start - base) * n / active).
            first = max(0, -(-(start_ms - base) * count // self.active_ms))
            for index in range(first, count):
                due = base + index * self.active_ms // count
                if due >= end_ms:
                    return
                yield due
            period += 1


PROFILES: dict[str, RateProfile] = {
    profile.name: profile
    for profile in (
        RateProfile("steady", records_per_period=720, period_ms=HOUR_MS, active_ms=HOUR_MS),
        RateProfile(
            "slow", records_per_period=1, period_ms=HOUR_MS, active_ms=1, phase_ms=30 * MINUTE_MS, scales=False
        ),
        RateProfile("heavy", records_per_period=18_000, period_ms=HOUR_MS, active_ms=HOUR_MS),
        RateProfile(
            "bursty", records_per_period=600, period_ms=20 * MINUTE_MS, active_ms=MINUTE_MS, phase_ms=5 * MINUTE_MS
        ),
    )
}

DEFAULT_PROFILE_ORDER = ("steady", "slow", "heavy", "bursty")


def profile_named(name: str) -> RateProfile:
    """The profile called ``name``; ValueError listing the known names otherwise."""
    if name not in PROFILES:
        raise ValueError(f"unknown profile {name!r}; choose from {', '.join(PROFILES)}")
    return PROFILES[name]


class GeneratedEvent(NamedTuple):
    """One telemetry record of ``partition``: when it was due, its event time (both ms, UTC), its payload."""

    nominal_time_ms: int
    partition: int
    event_time_ms: int
    payload: dict


def partition_events(
    profile: RateProfile,
    partition: int,
    start_ms: int,
    end_ms: int,
    seed: int,
    max_disorder_ms: int,
    rate_scale: float = 1.0,
    event_time_field: str = "event_time",
) -> Iterator[GeneratedEvent]:
    """The events of one partition over [start_ms, end_ms), in production order.

    Contract: the same arguments give the same events. Each event time is its nominal time minus
    a random 0..max_disorder_ms, and nominal times never decrease, so no event is more than
    max_disorder_ms behind the largest event time yielded before it in this partition, and every
    event time lies in [start_ms - max_disorder_ms, end_ms). A generator: memory stays flat.
    """
    rng = random.Random(f"tidemark-generator:{seed}:{partition}")
    fleet = ScooterFleet(partition, rng)
    for nominal in profile.nominal_times(start_ms, end_ms, rate_scale):
        event_time = nominal - int(rng.random() * (max_disorder_ms + 1))
        yield GeneratedEvent(nominal, partition, event_time, fleet.next_payload(event_time, event_time_field))
