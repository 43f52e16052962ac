"""A live ledger's history, generated: what the persist job would have written over days of
batches, with one partition stalled (seed 004's stuck shard) and one idle. For the watermark
page's tests and its load-time benchmark, which need weeks of ledger without weeks of running.

Every ``interval_ms`` one live batch writes a row per partition (LEDGER_COLUMNS order):
- a healthy partition reads the records produced since the last batch, event times up to one
  minute before the batch; its W_p = newest event time − bound − 1 ms;
- the stalled partition, from ``stalled_since_ms`` on, reads nothing while its log end grows:
  its position and W_p freeze, and G (the minimum over ACTIVE partitions) freezes with it;
- healthy partitions then read only up to T = G + max_drift (aligned reading): their W_p stops
  at T − bound − 1 ms, their position stands still, their lag grows (held by alignment, not stalled);
- the idle partition produced only before the first batch: caught up, IDLE, W_p unchanged.
Times are ms since the epoch (UTC); the rows carry datetimes (UTC) as the tables do.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

MINUTE_MS = 60_000


@dataclass(frozen=True)
class LedgerHistory:
    stream: str
    partitions: int
    start_ms: int  # read time of the first batch
    end_ms: int  # no batch at or after this
    interval_ms: int = 5 * MINUTE_MS
    records_per_batch: int = 300  # per healthy partition
    stalled_partition: int | None = None
    stalled_since_ms: int | None = None
    idle_partition: int | None = None
    bound_ms: int = 30_000  # max_out_of_orderness
    max_drift_ms: int = 15 * MINUTE_MS
    writer: str = "tidemark:recorded:live:generated"

    def rows(self) -> list[tuple]:
        """The history's ledger rows, batch by batch."""
        positions = [0] * self.partitions
        log_ends = [0] * self.partitions
        watermarks: list[int | None] = [None] * self.partitions
        global_watermark: int | None = None
        rows = []
        for step_id, read_ms in enumerate(range(self.start_ms, self.end_ms, self.interval_ms)):
            stalled_now = self.stalled_since_ms is not None and read_ms >= self.stalled_since_ms
            ceiling = (
                None
                if not stalled_now or global_watermark is None
                else global_watermark + self.max_drift_ms - self.bound_ms - 1
            )
            batch = []
            for p in range(self.partitions):
                start = positions[p]
                newest_event = read_ms - MINUTE_MS
                if p == self.idle_partition and step_id > 0:
                    status, read = "IDLE", 0
                elif p == self.stalled_partition and stalled_now:
                    log_ends[p] += self.records_per_batch
                    status, read = "ACTIVE", 0
                else:
                    log_ends[p] += self.records_per_batch
                    watermark = newest_event - self.bound_ms - 1
                    if ceiling is not None and watermark > ceiling:
                        status, read = "ACTIVE", 0  # paused at T by alignment
                        watermarks[p] = max(watermarks[p] or ceiling, ceiling)
                    else:
                        status, read = "ACTIVE", log_ends[p] - positions[p]
                        watermarks[p] = watermark
                positions[p] += read
                if p == self.stalled_partition and not stalled_now:
                    watermarks[p] = newest_event - self.bound_ms - 1
                batch.append((p, start, read, status, newest_event if read else None))
            active = [watermarks[p] for p, _, _, status, _ in batch if status == "ACTIVE" and watermarks[p] is not None]
            if active:
                global_watermark = max(global_watermark or min(active), min(active))
            for p, start, read, status, newest_event in batch:
                rows.append(
                    (
                        self.stream,
                        step_id,
                        p,
                        "live",
                        start,
                        start + read,
                        log_ends[p],
                        read,
                        0,
                        0,
                        read,
                        _datetime(newest_event - self.interval_ms) if read else None,
                        _datetime(newest_event) if read else None,
                        _datetime(watermarks[p]),
                        _datetime(global_watermark),
                        status,
                        "event_time",
                        _datetime(read_ms),
                        None,
                        False,
                        self.writer,
                    )
                )
        return rows


def _datetime(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC)
