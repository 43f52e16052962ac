"""A log in memory for the planner's unit tests: per partition, the record timestamps by offset."""

from __future__ import annotations

from dataclasses import dataclass, field

from tidemark.aligned_slices import LoggedRecord


@dataclass
class FakeLog:
    """Implements tidemark.aligned_slices.LogTimeIndex the way Kafka answers it.

    Every offset has a timestamp in the time index; offsets in ``without_data`` hold no data
    record (a transaction marker, an aborted record under read_committed, a compacted offset):
    the index still sees their timestamps, a reader never gets them.
    """

    timestamps: dict[int, list[int]] = field(default_factory=dict)
    without_data: dict[int, set[int]] = field(default_factory=dict)

    def append(self, partition: int, *timestamps_ms: int) -> None:
        self.timestamps.setdefault(partition, []).extend(timestamps_ms)

    def append_without_data(self, partition: int, *timestamps_ms: int) -> None:
        """Offsets a reader skips, e.g. a commit marker stamped with the wall clock of the commit."""
        first = len(self.timestamps.setdefault(partition, []))
        self.append(partition, *timestamps_ms)
        self.without_data.setdefault(partition, set()).update(range(first, first + len(timestamps_ms)))

    def log_ends(self) -> dict[int, int]:
        return {p: len(ts) for p, ts in self.timestamps.items()}

    def data(self, partition: int, start: int, end: int) -> list[int]:
        """The timestamps of the data records in [start, end): what a reader gets."""
        hidden = self.without_data.get(partition, set())
        return [ts for offset, ts in enumerate(self.timestamps[partition][start:end], start) if offset not in hidden]

    def offset_for_time(self, partition: int, timestamp_ms: int) -> int | None:
        for offset, ts in enumerate(self.timestamps.get(partition, [])):
            if ts >= timestamp_ms:
                return offset
        return None

    def next_record(self, partition: int, offset: int) -> LoggedRecord | None:
        records = self.timestamps.get(partition, [])
        hidden = self.without_data.get(partition, set())
        for candidate in range(offset, len(records)):
            if candidate not in hidden:
                return LoggedRecord(candidate, records[candidate])
        return None

    def last_record_time(self, partition: int, end: int) -> int | None:
        hidden = self.without_data.get(partition, set())
        for candidate in range(min(end, len(self.timestamps.get(partition, []))) - 1, -1, -1):
            if candidate not in hidden:
                return self.timestamps[partition][candidate]
        return None


class ManualClock:
    """Seconds since the epoch, moved by the test."""

    def __init__(self, now_ms: int):
        self.now_ms = now_ms

    def __call__(self) -> float:
        return self.now_ms / 1000

    def advance(self, ms: int) -> None:
        self.now_ms += ms
