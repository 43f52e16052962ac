"""What a run produces, in what order: every partition's events and bad records, merged by due time.

Merging by nominal (due) time makes a backlog interleave partitions the way they were live, and
lets live mode produce each record when the wall clock reaches it. Within a partition the order
is the one ``partition_events`` promises, so the disorder bound holds on the log.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass
from operator import attrgetter

from generator.bad_records import BadRecord, partition_bad_records
from generator.profiles import GeneratedEvent, RateProfile, partition_events


@dataclass(frozen=True)
class ProductionPlan:
    """One run: a profile per partition (index = partition) over [start_ms, end_ms), ms UTC."""

    profiles: tuple[RateProfile, ...]
    start_ms: int
    end_ms: int
    seed: int
    max_disorder_ms: int
    rate_scale: float = 1.0
    bad_records: int = 0
    event_time_field: str = "event_time"

    def records(self) -> Iterator[GeneratedEvent | BadRecord]:
        """All records of the run, ascending by nominal time; ties keep partition order (deterministic)."""
        partitions = len(self.profiles)
        streams = [
            partition_events(
                profile,
                partition,
                self.start_ms,
                self.end_ms,
                self.seed,
                self.max_disorder_ms,
                self.rate_scale,
                self.event_time_field,
            )
            for partition, profile in enumerate(self.profiles)
        ]
        streams += [
            partition_bad_records(
                partition, partitions, self.bad_records, self.start_ms, self.end_ms, self.event_time_field
            )
            for partition in range(partitions)
        ]
        return heapq.merge(*streams, key=attrgetter("nominal_time_ms"))
