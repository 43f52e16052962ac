"""The one-line JSON report of a run: per partition what was produced and its event-time range."""

from __future__ import annotations

from tidemark.event_time_text import format_optional_event_time


class PartitionTally:
    """Counts one partition's records and tracks its min/max event time (ms, UTC) as they are produced."""

    def __init__(self, partition: int, profile: str):
        self.partition = partition
        self.profile = profile
        self.records = 0
        self.bad_records = 0
        self.min_event_time_ms: int | None = None
        self.max_event_time_ms: int | None = None

    def count_event(self, event_time_ms: int) -> None:
        self.records += 1
        if self.min_event_time_ms is None or event_time_ms < self.min_event_time_ms:
            self.min_event_time_ms = event_time_ms
        if self.max_event_time_ms is None or event_time_ms > self.max_event_time_ms:
            self.max_event_time_ms = event_time_ms

    def count_bad_record(self) -> None:
        # Bad records have no trustworthy event time, so they do not widen the range.
        self.bad_records += 1

    def as_json(self) -> dict:
        return {
            "partition": self.partition,
            "profile": self.profile,
            "records": self.records,
            "bad_records": self.bad_records,
            "min_event_time": format_optional_event_time(self.min_event_time_ms),
            "max_event_time": format_optional_event_time(self.max_event_time_ms),
        }


def run_summary(run: dict, tallies: list[PartitionTally], elapsed_s: float) -> dict:
    """``run`` (what was asked: command, topic, window...) plus per-partition tallies, totals and rate.

    ``records_per_s`` counts every message produced, good and bad, over the wall-clock time from
    the first produce to the end of the final flush.
    """
    records = sum(tally.records for tally in tallies)
    bad_records = sum(tally.bad_records for tally in tallies)
    return {
        **run,
        "partitions": [tally.as_json() for tally in tallies],
        "records": records,
        "bad_records": bad_records,
        "elapsed_s": round(elapsed_s, 3),
        "records_per_s": round((records + bad_records) / elapsed_s, 1) if elapsed_s > 0 else None,
    }
