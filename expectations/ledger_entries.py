"""The ledger as the checks read it: one typed entry per (batch, partition), read once per run.

The ledger is small next to the events (one row per batch and partition), so a run collects it
whole and every check family reads the same snapshot: which ranges carried an hour's records,
whether live ranges are contiguous, the last K observations of the stall rules, the live
position. Times are ms since the epoch, UTC.
"""

from __future__ import annotations

from dataclasses import dataclass

from tidemark.accepted_loss import ACCEPTED_LOSS_MODE, AcceptedLoss
from tidemark.furthest_live_row import furthest_key, furthest_per_partition
from tidemark.log_position import position_value
from tidemark.offset_coverage import LIVE_MODE, LedgerRange, OffsetRange
from tidemark.stall_rules import LedgerObservation

HOUR_MS = 3_600_000


@dataclass(frozen=True)
class LedgerEntry:
    """One ledger row. ``data_records`` is the row's own count, or records + late + quarantined
    in rows written before the ledger counted data records."""

    step_id: int
    partition: int
    mode: str
    start: int
    end: int
    log_end: int | None
    data_records: int
    min_event_ms: int | None
    max_event_ms: int | None
    partition_watermark_ms: int | None
    global_watermark_ms: int | None
    read_time_ms: int | None
    status: str | None = None  # partition_status: ACTIVE | IDLE | FINISHED (a closed shard read to its end)
    writer: str | None = None  # tidemark:<stream>:<mode>:<run>; an accepted loss's names who accepted it

    @property
    def is_live(self) -> bool:
        return self.mode == LIVE_MODE

    @property
    def offsets(self) -> OffsetRange | None:
        """[start, end), or None for an empty batch (start == end)."""
        return OffsetRange(self.start, self.end) if self.end > self.start else None

    def carries_hour(self, hour_ms: int) -> bool:
        """True when the range held records with event times in [hour, hour + 1h)."""
        if self.min_event_ms is None or self.max_event_ms is None:
            return False
        return self.min_event_ms < hour_ms + HOUR_MS and self.max_event_ms >= hour_ms

    def ledger_range(self) -> LedgerRange:
        return LedgerRange(self.partition, self.start, self.end, self.data_records, self.mode)

    def observation(self) -> LedgerObservation:
        return LedgerObservation(
            read_time_ms=self.read_time_ms or 0,
            position=self.end,
            log_end=self.log_end if self.log_end is not None else self.end,
            partition_watermark_ms=self.partition_watermark_ms,
            global_watermark_ms=self.global_watermark_ms,
        )


def read_ledger(ledger_frame) -> list[LedgerEntry]:
    """Collect the ledger table's rows as entries, ordered by partition, start, batch. Positions
    become ints whatever the stream's position type (Kafka's BIGINT, Kinesis's text keys)."""
    from pyspark.sql import functions as F

    def millis(column: str):
        return F.unix_millis(F.col(column))

    data_records = F.coalesce(F.col("data_records"), F.col("records") + F.col("late") + F.col("quarantined"), F.lit(0))
    rows = ledger_frame.select(
        F.col("step_id"),
        F.col("source_partition"),
        F.col("mode"),
        F.col("start_offset"),
        F.col("end_offset"),
        F.col("log_end_offset"),
        data_records.alias("data_records"),
        millis("min_event_time").alias("min_event_ms"),
        millis("max_event_time").alias("max_event_ms"),
        millis("partition_watermark").alias("partition_watermark_ms"),
        millis("global_watermark").alias("global_watermark_ms"),
        millis("read_time").alias("read_time_ms"),
        F.col("partition_status"),
        F.col("writer"),
    ).collect()
    entries = [
        LedgerEntry(
            row[0],
            row[1],
            row[2],
            position_value(row[3]),
            position_value(row[4]),
            position_value(row[5]),
            *row[6:],
        )
        for row in rows
    ]
    return sorted(entries, key=lambda e: (e.partition, e.start, e.end, e.step_id))


LEDGER_READ_COLUMNS = (
    "step_id",
    "source_partition",
    "mode",
    "start_offset",
    "end_offset",
    "log_end_offset",
    "records",
    "late",
    "quarantined",
    "data_records",
    "min_event_time",
    "max_event_time",
    "partition_watermark",
    "global_watermark",
    "read_time",
    "partition_status",
    "writer",
)


def ledger_entries(ledger) -> list[LedgerEntry]:
    """read_ledger's entries from the ledger as a pyarrow Table (LEDGER_READ_COLUMNS, read
    without Spark: expectations.lake_snapshot), the same values in the same order."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def values(column: str) -> list:
        return ledger.column(column).to_pylist()

    def millis(column: str) -> list:
        micros = pc.cast(pc.cast(ledger.column(column), pa.timestamp("us", tz="UTC")), pa.int64())
        return [None if v is None else v // 1000 for v in micros.to_pylist()]

    summed = pc.add(pc.add(ledger.column("records"), ledger.column("late")), ledger.column("quarantined"))
    data_records = [
        own if own is not None else (total if total is not None else 0)
        for own, total in zip(values("data_records"), summed.to_pylist())
    ]
    entries = [
        LedgerEntry(
            step,
            partition,
            mode,
            position_value(start),
            position_value(end),
            position_value(log_end),
            records,
            *times,
            status,
            writer,
        )
        for step, partition, mode, start, end, log_end, records, *times, status, writer in zip(
            values("step_id"),
            values("source_partition"),
            values("mode"),
            values("start_offset"),
            values("end_offset"),
            values("log_end_offset"),
            data_records,
            millis("min_event_time"),
            millis("max_event_time"),
            millis("partition_watermark"),
            millis("global_watermark"),
            millis("read_time"),
            values("partition_status"),
            values("writer") if "writer" in ledger.column_names else [None] * ledger.num_rows,
        )
    ]
    return sorted(entries, key=lambda e: (e.partition, e.start, e.end, e.step_id))


def accepted_losses(entries: list[LedgerEntry]) -> list[AcceptedLoss]:
    """The ranges a person accepted as lost (tidemark.accepted_loss), from the ledger's
    ``accepted_loss`` rows, in order."""
    return sorted(
        AcceptedLoss.from_ledger(e.partition, e.start, e.end, e.writer, e.read_time_ms)
        for e in entries
        if e.mode == ACCEPTED_LOSS_MODE
    )


def live_position(entries: list[LedgerEntry], partition: int) -> int | None:
    """The offset the live job reads next on ``partition``: the end of its furthest live row."""
    furthest = furthest_live_entry(entries, partition)
    return None if furthest is None else furthest.end


def finished_partitions(entries: list[LedgerEntry]) -> set[int]:
    """Partitions whose newest live row says FINISHED: a closed Kinesis shard read to its end,
    which can never hold an unread record again."""
    return {
        partition
        for partition in {e.partition for e in entries}
        if (furthest := furthest_live_entry(entries, partition)) is not None and furthest.status == "FINISHED"
    }


def furthest_live_entry(entries: list[LedgerEntry], partition: int) -> LedgerEntry | None:
    """The partition's furthest live row (tidemark.furthest_live_row: the row the live job resumes
    from), or None before its first."""
    live = (e for e in entries if e.partition == partition and e.is_live)
    rows = furthest_per_partition(
        live, partition=lambda e: e.partition, key=lambda e: furthest_key(e.end, e.read_time_ms, e.step_id)
    )
    return rows.get(partition)
