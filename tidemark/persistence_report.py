"""The persistence report: per partition, what the log holds against what the lake holds.

For a Kafka topic (dense offsets) a partition's offsets in the log (earliest..readable end) are
the offsets the live ranges read that held no data record (transaction markers, aborted
transactions, compacted offsets), the records persisted to events, late and quarantined, and the
offsets not yet read (lag). Offsets are not records: on a topic the live job read from its
earliest offset, the five numbers after the first add up to it.

A Kinesis stream's shards have no offsets to count (sequence numbers are sparse): per shard its
state (open, closed, gone: no longer listed; FINISHED when the ledger says so), the data records
the live ranges read, those persisted, late and quarantined (the last three add up to the first),
and how far (ms) the lake's position is behind the shard's tip (Kinesis's MillisBehindLatest).

Only the live ledger rows count: they cover each offset once (tidemark.offset_coverage); a
recovery's or a backfill's rows read offsets again that live counted already.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from tidemark.partition_status import PartitionStatus
from tidemark.shard_lineage import ShardInfo, shard_id_of


class PartitionBounds(Protocol):
    """A Kafka partition's offsets now: [earliest, end) retained, ``end`` the readable end."""

    earliest: int
    end: int


@dataclass(frozen=True)
class LakeFigures:
    """The lake's half of the report, per partition: rows of the events, late and quarantine
    tables; the end position (an int) and status of the live ledger's furthest row
    (tidemark.furthest_live_row); the data records the live ranges held; the offsets they read
    that held none (dense positions only: empty for sequence numbers); the hours sealed and the
    start (ms since the epoch, UTC) of the newest, None before the first."""

    persisted: Mapping[int, int]
    late: Mapping[int, int]
    quarantined: Mapping[int, int]
    positions: Mapping[int, int]
    statuses: Mapping[int, PartitionStatus]
    read: Mapping[int, int]
    without_data: Mapping[int, int]
    sealed_hours: int
    latest_sealed_hour_ms: int | None

    def shards_to_ask(self, listed: Mapping[int, ShardInfo]) -> dict[int, int]:
        """The lake's position of each listed shard the ledger has not FINISHED: where Kinesis
        is asked how far behind its tip the lake is."""
        return {
            p: at
            for p, at in self.positions.items()
            if p in listed and self.statuses.get(p) != PartitionStatus.FINISHED
        }


@dataclass(frozen=True)
class PartitionReport:
    partition: int
    log_earliest: int
    log_end: int
    ledger_position: int
    without_data: int  # offsets read that held no data record
    persisted: int
    late: int
    quarantined: int

    @property
    def in_log(self) -> int:
        """Offsets in the log, not records."""
        return self.log_end - self.log_earliest

    @property
    def lag(self) -> int:
        return self.log_end - self.ledger_position


@dataclass(frozen=True)
class ShardReport:
    partition: int
    shard_id: str
    state: str  # open | closed | gone (no longer listed) ; FINISHED when the ledger says so
    read: int  # data records the ledger's ranges held
    persisted: int
    late: int
    quarantined: int
    millis_behind_latest: int | None  # at the lake's position; None: not asked (finished, gone)


def partition_reports(lake: LakeFigures, bounds: Mapping[int, PartitionBounds]) -> list[PartitionReport]:
    """One report per partition of the topic (``bounds``, asked of the log now), ascending; a
    partition the ledger never read stands at its earliest offset."""
    return [
        PartitionReport(
            partition,
            now.earliest,
            now.end,
            lake.positions.get(partition, now.earliest),
            lake.without_data.get(partition, 0),
            lake.persisted.get(partition, 0),
            lake.late.get(partition, 0),
            lake.quarantined.get(partition, 0),
        )
        for partition, now in sorted(bounds.items())
    ]


def shard_reports(
    lake: LakeFigures, listed: Mapping[int, ShardInfo], behind: Mapping[int, int | None]
) -> list[ShardReport]:
    """One report per shard Kinesis lists now (``listed``) or the ledger read, ascending.
    ``behind``: MillisBehindLatest at the lake's position of the shards asked
    (``LakeFigures.shards_to_ask``)."""
    reports = []
    for partition in sorted(set(listed) | set(lake.positions)):
        shard = listed.get(partition)
        state = "gone" if shard is None else ("closed" if shard.closed else "open")
        if lake.statuses.get(partition) == PartitionStatus.FINISHED:
            state = PartitionStatus.FINISHED.value
        reports.append(
            ShardReport(
                partition,
                shard.shard_id if shard is not None else shard_id_of(partition),
                state,
                lake.read.get(partition, 0),
                lake.persisted.get(partition, 0),
                lake.late.get(partition, 0),
                lake.quarantined.get(partition, 0),
                behind.get(partition),
            )
        )
    return reports
