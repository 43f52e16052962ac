"""What one partition's share of one aligned step held: the counts its ledger row reports.

The source counts while it decodes (spark_jobs.log_source.decode_stage) and hands the counts to the persist
batch as one *summary row* per (partition, step) after that partition's records, so the batch
learns them without a pass of its own over the records. The persist batch can then write
``events`` straight from the source, in the same pass as the read.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

SUMMARY_ROW = "summary"

# Where a decoded record goes (the ``route`` column): one word per table.
EVENTS, LATE, QUARANTINE = "events", "late", "quarantine"


@dataclass
class StepCounts:
    """Counts of one partition in one aligned step (``seq``: its batch id in the ledger).

    ``data_records``: data records read (valid or not; markers, aborted and compacted offsets
    are not records); ``records``: persisted to events; ``late``: routed to late; ``quarantined``:
    rejected. ``min_event_time_ms`` / ``max_event_time_ms``: over the valid records (events and
    late), ms since the epoch, None when there were none."""

    partition: int
    seq: int
    records: int = 0
    late: int = 0
    quarantined: int = 0
    data_records: int = 0
    min_event_time_ms: int | None = None
    max_event_time_ms: int | None = None

    def add(self, route: str, event_time_ms: int | None) -> None:
        """Count one data record routed to ``route`` (EVENTS, LATE or QUARANTINE)."""
        self.data_records += 1
        if route == QUARANTINE:
            self.quarantined += 1
            return
        if route == LATE:
            self.late += 1
        else:
            self.records += 1
        if self.min_event_time_ms is None or event_time_ms < self.min_event_time_ms:
            self.min_event_time_ms = event_time_ms
        if self.max_event_time_ms is None or event_time_ms > self.max_event_time_ms:
            self.max_event_time_ms = event_time_ms

    def add_many(self, route: str, count: int, min_event_time_ms: int | None, max_event_time_ms: int | None) -> None:
        """Count ``count`` data records routed to ``route`` whose event times (valid records)
        span [min_event_time_ms, max_event_time_ms]: as ``count`` calls of ``add``."""
        self.data_records += count
        if route == QUARANTINE:
            self.quarantined += count
            return
        if route == LATE:
            self.late += count
        else:
            self.records += count
        if self.min_event_time_ms is None or min_event_time_ms < self.min_event_time_ms:
            self.min_event_time_ms = min_event_time_ms
        if self.max_event_time_ms is None or max_event_time_ms > self.max_event_time_ms:
            self.max_event_time_ms = max_event_time_ms

    def to_text(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_text(cls, text: str) -> StepCounts:
        return cls(**json.loads(text))


@dataclass
class StepCounter:
    """The StepCounts of everything one task decoded, by (partition, seq), in first-seen order."""

    counts: dict[tuple[int, int], StepCounts] = field(default_factory=dict)

    def add(self, partition: int, seq: int, route: str, event_time_ms: int | None) -> None:
        key = (partition, seq)
        step = self.counts.get(key)
        if step is None:
            step = self.counts[key] = StepCounts(partition, seq)
        step.add(route, event_time_ms)

    def add_many(
        self,
        partition: int,
        seq: int,
        route: str,
        count: int,
        min_event_time_ms: int | None,
        max_event_time_ms: int | None,
    ) -> None:
        """``count`` records of (partition, seq) routed to ``route``: see StepCounts.add_many."""
        key = (partition, seq)
        step = self.counts.get(key)
        if step is None:
            step = self.counts[key] = StepCounts(partition, seq)
        step.add_many(route, count, min_event_time_ms, max_event_time_ms)
