"""How far a backfill is: offsets read of the planned ranges, records, and the time left.

Progress is measured from positions, not from counts kept in memory: a backfill resumed after a
kill reports where it stands, not what this process has read. The time left is extrapolated from
the rate since the end of this process's first batch, so a resumed run does not count the
offsets its predecessor read as its own speed. Time comes from an injected clock (seconds).

Only dense positions (Kafka offsets) measure how much is left: a Kinesis sequence range's
width says nothing of its records. With sparse positions (``dense=False``) progress is the
shards finished and the records read; the offsets and the time left are None (unknown).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ProgressReport:
    offsets_done: int | None  # None: positions are not counts (Kinesis)
    offsets_total: int | None
    records: int  # data records read by this process
    partitions_done: int
    partitions: int
    records_per_second: float | None  # since the end of this process's first batch; None: no rate yet
    seconds_left: float | None  # None: no rate yet

    @property
    def fraction(self) -> float:
        """Offsets read of all; with sparse positions, partitions finished of all."""
        if self.offsets_total is None:
            return 1.0 if self.partitions == 0 else self.partitions_done / self.partitions
        return 1.0 if self.offsets_total == 0 else self.offsets_done / self.offsets_total

    def to_json(self) -> dict:
        return {
            "percent": round(100 * self.fraction, 1),
            "offsets_done": self.offsets_done,
            "offsets_total": self.offsets_total,
            "records": self.records,
            "partitions_done": f"{self.partitions_done}/{self.partitions}",
            "records_per_second": None if self.records_per_second is None else round(self.records_per_second),
            "estimated_seconds_left": None if self.seconds_left is None else round(self.seconds_left),
        }

    @classmethod
    def from_json(cls, data: dict) -> ProgressReport:
        """The report back from ``to_json`` (the backfill job's ``backfill_progress`` log line),
        with its rounding: the rate and the time left are whole numbers. KeyError or ValueError
        when ``data`` is not such a report."""
        done, _, partitions = str(data["partitions_done"]).partition("/")
        rate, left = data.get("records_per_second"), data.get("estimated_seconds_left")
        done_offsets, total_offsets = data["offsets_done"], data["offsets_total"]
        return cls(
            None if done_offsets is None else int(done_offsets),
            None if total_offsets is None else int(total_offsets),
            int(data["records"]),
            int(done),
            int(partitions),
            None if rate is None else float(rate),
            None if left is None else float(left),
        )


class BackfillProgress:
    """Fed each batch's end positions; ``ranges`` is {partition: (start, end)} of the whole run."""

    def __init__(
        self, ranges: dict[int, tuple[int, int]], clock: Callable[[], float] = time.monotonic, dense: bool = True
    ):
        self._ranges = dict(ranges)
        self._dense = dense
        self._positions = {p: start for p, (start, _) in self._ranges.items()}
        self._clock = clock
        self._started: float | None = None
        self._done_at_start: int | None = None
        self._records = 0
        self._records_at_start = 0

    def batch_read(self, positions: dict[int, int], records: int) -> ProgressReport:
        """Record a batch that read up to ``positions`` ({partition: next offset}) with ``records``."""
        now = self._clock()
        for partition, position in positions.items():
            if partition in self._positions:
                self._positions[partition] = max(self._positions[partition], min(position, self._ranges[partition][1]))
        self._records += records
        if self._started is None:
            # The end of this process's first batch is the baseline of the rate: before it lie
            # the session's start-up and, after a kill, the predecessor's reading.
            self._started = now
            self._done_at_start = self._done()
            self._records_at_start = self._records
        done, total = self._done(), sum(end - start for start, end in self._ranges.values())
        seconds = now - self._started
        read_here = done - self._done_at_start
        left = None if seconds <= 0 or read_here <= 0 else (total - done) * seconds / read_here
        rate = None if seconds <= 0 else (self._records - self._records_at_start) / seconds
        finished = sum(1 for p, (_, end) in self._ranges.items() if self._positions[p] >= end)
        if not self._dense:
            return ProgressReport(None, None, self._records, finished, len(self._ranges), rate, None)
        return ProgressReport(done, total, self._records, finished, len(self._ranges), rate, left)

    def _done(self) -> int:
        return sum(self._positions[p] - start for p, (start, _) in self._ranges.items())
