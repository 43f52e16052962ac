"""The Spark side of resuming from the lake (see tidemark.resume_point): reads the ledger, the
seals and the data tables, and decides whether a live run starts from them."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from tidemark.event_time_text import format_optional_event_time
from tidemark.furthest_live_row import FURTHEST_FIRST
from tidemark.resume_point import LedgerPosition, resume_state
from tidemark.source_state import SourceState

log = logging.getLogger("tidemark.persist")


@dataclass(frozen=True)
class LakeResume:
    """The state to start from, the offsets beyond the ledger's positions that the tables
    already hold ({partition: (start, end)}: written by a run whose ledger commit never came),
    and the G the newest seal was made under (ms; None: no seal yet), where sealing continues."""

    state: SourceState
    written_beyond_ledger: dict[int, tuple[int, int]]
    sealed_global_watermark_ms: int | None = None


def resume_from_lake(spark, tables, now_ms: int) -> LakeResume | None:
    """The resume point the tables give, or None when the ledger holds no live row. Each
    partition resumes from its furthest live row (tidemark.furthest_live_row)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    furthest = Window.partitionBy("source_partition").orderBy(*(F.col(column).desc() for column in FURTHEST_FIRST))
    live = tables.read("ledger").where(F.col("mode") == "live")
    rows = live.withColumn("rank", F.row_number().over(furthest)).where(F.col("rank") == 1).collect()
    last_step_id = live.agg(F.max("step_id")).first()[0]
    positions = [
        LedgerPosition(
            partition=row.source_partition,
            end_offset=tables.positions.from_column(row.end_offset),
            log_end=tables.positions.from_column(row.log_end_offset),
            partition_watermark_ms=_ms(row.partition_watermark),
            global_watermark_ms=_ms(row.global_watermark),
            status=row.partition_status,
            slicing=row.slicing,
            read_time_ms=_ms(row.read_time),
        )
        for row in rows
    ]
    sealed_g = tables.read("seals").agg(F.max("global_watermark")).first()[0]
    state = resume_state(positions, _ms(sealed_g), now_ms, -1 if last_step_id is None else last_step_id)
    if state is None:
        return None
    beyond = _written_beyond(tables, state.positions())
    log.warning(
        {
            "event": "resumed_from_ledger",
            "detail": "no checkpoint: the job continues from the positions, watermarks and G the ledger holds, "
            "not from the log's start; records already in the tables are not written again",
            "positions": {str(p): position for p, position in sorted(state.positions().items())},
            "global_watermark": format_optional_event_time(state.global_watermark_ms),
            "written_beyond_ledger": {str(p): list(zone) for p, zone in sorted(beyond.items())},
        }
    )
    return LakeResume(state, beyond, _ms(sealed_g))


def _written_beyond(tables, positions: dict[int, int]) -> dict[int, tuple[int, int]]:
    from pyspark.sql import functions as F

    persisted = tables.persisted_offsets({p: (position, None) for p, position in positions.items()})
    rows = persisted.groupBy("source_partition").agg(F.max("source_offset").alias("last")).collect()
    last = tables.positions.from_column
    return {row.source_partition: (positions[row.source_partition], last(row.last) + 1) for row in rows}


def _ms(value) -> int | None:
    return None if value is None else int(value.timestamp() * 1000)
