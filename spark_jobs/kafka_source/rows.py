"""The rows the Kafka source yields, as Arrow: a ``range`` row per planned range, the ``record``
rows of each range, and (when decoding) a ``summary`` row per (partition, aligned step).

All three share one Arrow schema (``arrow_schema``, the columns of
tidemark.planned_range.RAW_RECORD_SCHEMA); a column a kind does not use is null.
"""

from __future__ import annotations

from spark_jobs.log_source.planned_reading import PartitionRange, raw_arrow_schema
from tidemark.planned_range import RANGE_ROW, RECORD_ROW, PlannedRange


def arrow_schema(pa):
    """The Arrow schema of every row the source yields undecoded: tidemark.planned_range's raw
    columns, positions as int64 offsets."""
    return raw_arrow_schema(pa, pa.int64())


def range_batch(pa, ranges: tuple[PartitionRange, ...]):
    """One range row per planned range: the rows that become the partitions' ledger rows."""
    return pa.RecordBatch.from_pylist(
        [
            {
                "row_kind": RANGE_ROW,
                "source_partition": planned.partition,
                "source_offset": planned.start,
                "log_timestamp_ms": None,
                "record_key": None,
                "value": None,
                "range_end": planned.end,
                "log_end_offset": planned.log_end,
                "read_time_ms": planned.read_time_ms,
                "planned_range": planned.planned_range,
                "step_counts": None,
                "step_id": None,
                "global_watermark_ms": None,
            }
            for planned in ranges
        ],
        schema=arrow_schema(pa),
    )


def record_batch(pa, partition: PartitionRange, planned: PlannedRange, records):
    """The records as Arrow, each with the aligned step it was planned in and that step's G."""
    import numpy as np

    count = len(records)
    offsets = np.fromiter((r.offset for r in records), dtype=np.int64, count=count)
    steps = planned.steps
    # A step holds offsets [its start, its end): the first step whose end > the offset.
    which = np.searchsorted(np.array([step.end for step in steps], dtype=np.int64), offsets, side="right")
    which = pa.array(np.minimum(which, len(steps) - 1))
    step_ids = pa.array([step.seq for step in steps], pa.int64()).take(which)
    step_watermarks = pa.array([step.global_watermark_ms for step in steps], pa.int64()).take(which)
    return pa.RecordBatch.from_arrays(
        [
            pa.array([RECORD_ROW] * count, pa.string()),
            pa.array([partition.partition] * count, pa.int32()),
            pa.array(offsets, pa.int64()),
            pa.array([r.timestamp_ms for r in records], pa.int64()),
            pa.array([r.key for r in records], pa.binary()),
            pa.array([r.value for r in records], pa.binary()),
            pa.array([partition.end] * count, pa.int64()),
            pa.array([partition.log_end] * count, pa.int64()),
            pa.array([partition.read_time_ms] * count, pa.int64()),
            pa.nulls(count, pa.string()),
            pa.nulls(count, pa.string()),
            step_ids,
            step_watermarks,
        ],
        schema=arrow_schema(pa),
    )
