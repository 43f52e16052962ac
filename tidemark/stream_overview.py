"""One stream at a glance: per partition where the live reading stands, and how the watermarks
and the lag moved, as the watermark page and ``tidemark status`` show it.

Built from the live ledger rows (one per batch and partition), the per-partition totals, the
newest seal and, when the log answered, its readable ends and the log time of each partition's
oldest unpersisted record. Times are ms since the epoch, UTC; offsets are Kafka offsets.

A partition's ``status`` is its stall status (tidemark.stall_rules: STOP, STALL, LAGGING, WARN)
when that is not OK, otherwise its reading status from the newest ledger row (ACTIVE or IDLE):
a stalled partition must stand out, and an idle one is not a problem.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tidemark.log_position import KAFKA_OFFSETS, PositionType
from tidemark.stall_rules import LedgerObservation, StallRules, StallStatus, StallVerdict, partition_stall_status

# The statuses that mean "look here", worst first.
ATTENTION = (StallStatus.STOP.value, StallStatus.STALL.value, StallStatus.LAGGING.value, StallStatus.WARN.value)

NO_LEDGER = "NO LEDGER ROWS"


@dataclass(frozen=True)
class LedgerPoint:
    """One live ledger row as the overview reads it: after the batch planned at ``read_time_ms``
    the partition's read position was ``position`` (the next offset to read) and the log's
    readable end ``log_end``; ``reading_status`` is the ledger's partition_status (ACTIVE, IDLE)."""

    partition: int
    read_time_ms: int
    position: int
    log_end: int
    partition_watermark_ms: int | None
    global_watermark_ms: int | None
    reading_status: str

    def observation(self) -> LedgerObservation:
        return LedgerObservation(
            self.read_time_ms, self.position, self.log_end, self.partition_watermark_ms, self.global_watermark_ms
        )


@dataclass(frozen=True)
class PartitionTotals:
    """Rows of one partition in the late and quarantine tables."""

    late: int = 0
    quarantined: int = 0


@dataclass(frozen=True)
class PartitionOverview:
    partition: int
    position: int | None  # next offset the live job reads; None before its first batch
    log_end: int | None  # the log's readable end: now when the log answered, else as of the newest row
    lag: int | None  # offsets not yet read: log_end - position
    partition_watermark_ms: int | None
    status: str  # a stall status when not OK, else ACTIVE / IDLE (NO LEDGER ROWS before any)
    reason: str  # the sentence behind the status
    retention_deadline_ms: (
        int | None
    )  # when the oldest unpersisted record leaves the log; None: nothing unread or unknown
    totals: PartitionTotals
    as_of_ms: int | None  # read time of the partition's newest live ledger row
    # Ranges lost to retention and accepted as lost (tidemark.accepted_loss.AcceptedLoss): shown, with who and when.
    accepted_lost: tuple = ()

    @property
    def needs_attention(self) -> bool:
        return self.status in ATTENTION


@dataclass(frozen=True)
class Line:
    """A chart line: (time ms, value) points in time order."""

    label: str
    points: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class StreamOverview:
    stream: str
    now_ms: int
    partitions: tuple[PartitionOverview, ...]
    global_watermark_ms: int | None
    last_sealed_hour_ms: int | None  # start of the newest sealed hour
    watermark_lines: tuple[Line, ...]  # one per partition, W_p over time, then G's line last
    lag_lines: tuple[Line, ...]  # one per partition, lag in offsets over time
    ledger_rows: int  # live ledger rows read; 0: the page says the ledger is empty
    log_answered: bool  # False: log ends are the newest ledger rows', no retention deadlines
    notes: tuple[str, ...] = field(default=())


def build_stream_overview(
    stream: str,
    points: Sequence[LedgerPoint],
    totals: Mapping[int, PartitionTotals],
    partitions: Sequence[int],
    rules: StallRules,
    retention_ms: int,
    now_ms: int,
    last_sealed_hour_ms: int | None = None,
    log_ends: Mapping[int, int] | None = None,
    oldest_unread_ms: Mapping[int, int | None] | None = None,
    max_chart_points: int = 300,
    positions: PositionType = KAFKA_OFFSETS,
    accepted_lost: Sequence = (),
) -> StreamOverview:
    """The overview at ``now_ms``. ``points``: the live ledger rows of the charted window (at
    least the last ``rules.window`` per partition, and the last stall timeout for STOP).
    ``partitions``: every partition to show (the log's, the config's and the ledger's).
    ``log_ends``: the log's readable ends now, None when the log did not answer.
    ``oldest_unread_ms``: per lagging partition, the log time of the record at its position.
    ``accepted_lost``: the ranges accepted as lost (tidemark.accepted_loss.AcceptedLoss)."""
    by_partition: dict[int, list[LedgerPoint]] = {}
    for point in sorted(points, key=lambda p: (p.partition, p.read_time_ms)):
        by_partition.setdefault(point.partition, []).append(point)
    shown = sorted(set(partitions) | set(by_partition))
    overviews = tuple(
        _partition_overview(
            partition,
            by_partition.get(partition, []),
            totals.get(partition, PartitionTotals()),
            rules,
            retention_ms,
            now_ms,
            None if log_ends is None else log_ends.get(partition),
            (oldest_unread_ms or {}).get(partition),
            positions,
        )
        for partition in shown
    )
    overviews = tuple(
        dataclasses.replace(o, accepted_lost=tuple(a for a in accepted_lost if a.partition == o.partition))
        for o in overviews
    )
    global_points = sorted(
        {(p.read_time_ms, p.global_watermark_ms) for p in points if p.global_watermark_ms is not None}
    )
    watermark_lines = tuple(
        Line(
            f"partition {partition}",
            _thinned(
                [(p.read_time_ms, p.partition_watermark_ms) for p in rows if p.partition_watermark_ms is not None],
                max_chart_points,
            ),
        )
        for partition, rows in sorted(by_partition.items())
    ) + (Line("G", _thinned(global_points, max_chart_points)),)
    lag_lines = tuple(
        Line(
            f"partition {partition}",
            _thinned([(p.read_time_ms, max(p.log_end - p.position, 0)) for p in rows], max_chart_points),
        )
        for partition, rows in sorted(by_partition.items())
    )
    return StreamOverview(
        stream=stream,
        now_ms=now_ms,
        partitions=overviews,
        global_watermark_ms=max((g for _, g in global_points), default=None),
        last_sealed_hour_ms=last_sealed_hour_ms,
        watermark_lines=watermark_lines,
        lag_lines=lag_lines,
        ledger_rows=len(points),
        log_answered=log_ends is not None,
    )


def _partition_overview(
    partition: int,
    rows: list[LedgerPoint],
    totals: PartitionTotals,
    rules: StallRules,
    retention_ms: int,
    now_ms: int,
    log_end_now: int | None,
    oldest_unread_ms: int | None,
    positions: PositionType = KAFKA_OFFSETS,
) -> PartitionOverview:
    if not rows:
        return PartitionOverview(
            partition,
            None,
            log_end_now,
            None,
            None,
            NO_LEDGER,
            "the live job has not read this partition yet",
            None,
            totals,
            None,
        )
    newest = rows[-1]
    verdict: StallVerdict = partition_stall_status(
        [r.observation() for r in rows], rules, now_ms, log_end_now, positions
    )
    status = newest.reading_status if verdict.status is StallStatus.OK else verdict.status.value
    log_end = newest.log_end if log_end_now is None else log_end_now
    lag = max(log_end - newest.position, 0)
    deadline = oldest_unread_ms + retention_ms if lag and oldest_unread_ms is not None else None
    return PartitionOverview(
        partition,
        newest.position,
        log_end,
        lag,
        newest.partition_watermark_ms,
        status,
        verdict.reason,
        deadline,
        totals,
        newest.read_time_ms,
    )


def _thinned(points: list[tuple[int, int]], most: int) -> tuple[tuple[int, int], ...]:
    """At most ``most`` points, evenly spaced in the list, the last one always kept (where it
    stands now is what a chart must not lose)."""
    if len(points) <= most:
        return tuple(points)
    step = len(points) / (most - 1)
    kept = [points[int(i * step)] for i in range(most - 1)]
    return tuple(kept + [points[-1]])
