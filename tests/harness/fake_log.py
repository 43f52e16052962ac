"""A log in memory for the planner's unit tests: per partition, the record timestamps by offset."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FakeLog:
    """Implements tidemark.aligned_slices.LogTimeIndex the way Kafka answers it."""

    timestamps: dict[int, list[int]] = field(default_factory=dict)

    def append(self, partition: int, *timestamps_ms: int) -> None:
        self.timestamps.setdefault(partition, []).extend(timestamps_ms)

    def log_ends(self) -> dict[int, int]:
        return {p: len(ts) for p, ts in self.timestamps.items()}

    def offset_for_time(self, partition: int, timestamp_ms: int) -> int | None:
        for offset, ts in enumerate(self.timestamps.get(partition, [])):
            if ts >= timestamp_ms:
                return offset
        return None

    def record_time(self, partition: int, offset: int) -> int | None:
        records = self.timestamps.get(partition, [])
        return records[offset] if offset < len(records) else None


class ManualClock:
    """Seconds since the epoch, moved by the test."""

    def __init__(self, now_ms: int):
        self.now_ms = now_ms

    def __call__(self) -> float:
        return self.now_ms / 1000

    def advance(self, ms: int) -> None:
        self.now_ms += ms
