"""The simulated scooters of one partition: who reports, where they are, how full their battery is.

Each partition owns its own devices (``scooter-p<partition>-<nnnn>``), so a device's records all
land in one partition and its key never moves. State is one small entry per device, so memory
stays flat however many records are generated.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tidemark.event_time_text import format_event_time

DEVICES_PER_PARTITION = 50

# Scooters wander around central Amsterdam.
_CENTER_LAT = 52.37
_CENTER_LON = 4.89
_SPREAD_DEG = 0.05
_STEP_DEG = 0.0005


@dataclass
class _Scooter:
    device_id: str
    lat: float
    lon: float
    battery: int


class ScooterFleet:
    """Builds telemetry payloads for one partition's devices, deterministically from ``rng``."""

    def __init__(self, partition: int, rng: random.Random):
        self._rng = rng
        self._scooters = [
            _Scooter(
                device_id=f"scooter-p{partition}-{number:04d}",
                lat=_CENTER_LAT + rng.uniform(-_SPREAD_DEG, _SPREAD_DEG),
                lon=_CENTER_LON + rng.uniform(-_SPREAD_DEG, _SPREAD_DEG),
                battery=rng.randint(30, 100),
            )
            for number in range(DEVICES_PER_PARTITION)
        ]

    def next_payload(self, event_time_ms: int, event_time_field: str = "event_time") -> dict:
        """One device's report at ``event_time_ms`` (ms since the epoch, UTC); moves that device a step."""
        rng = self._rng
        scooter = self._scooters[int(rng.random() * DEVICES_PER_PARTITION)]
        scooter.lat += (rng.random() - 0.5) * _STEP_DEG
        scooter.lon += (rng.random() - 0.5) * _STEP_DEG
        # Drains about one percent every ten reports; a scooter at 5% is swapped for a charged one.
        if rng.random() < 0.1:
            scooter.battery -= 1
        if scooter.battery < 5:
            scooter.battery = 100
        return {
            "device_id": scooter.device_id,
            event_time_field: format_event_time(event_time_ms),
            "lat": round(scooter.lat, 6),
            "lon": round(scooter.lon, 6),
            "battery": scooter.battery,
        }
