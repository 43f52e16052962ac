"""The rows the log source yields, as Arrow: a ``range`` row per planned range, the ``record``
rows of each range, and (when decoding) a ``summary`` row per (partition, aligned step).

All three share one Arrow schema (``arrow_schema``, the columns of
tidemark.planned_range.raw_record_schema); a column a kind of row does not use is null. The
three position columns have the stream's position type: int64 offsets for Kafka, fixed-width
text keys for Kinesis sequence numbers (tidemark.log_position), so a 56-digit sequence number is
carried exactly and orders correctly in Spark and Delta.
"""

from __future__ import annotations

import bisect

from spark_jobs.log_source.planned_reading import PartitionRange, raw_arrow_schema
from tidemark.log_position import PositionType
from tidemark.planned_range import RANGE_ROW, RECORD_ROW, PlannedRange


def arrow_schema(pa, positions: PositionType):
    """The Arrow schema of every row the source yields undecoded, positions of ``positions``' type."""
    return raw_arrow_schema(pa, pa.int64() if positions.sql_type == "BIGINT" else pa.string())


def range_batch(pa, positions: PositionType, ranges: tuple[PartitionRange, ...]):
    """One range row per planned range: the rows that become the partitions' ledger rows."""
    return pa.RecordBatch.from_pylist(
        [
            {
                "row_kind": RANGE_ROW,
                "source_partition": planned.partition,
                "source_offset": positions.to_column(planned.start),
                "range_end": positions.to_column(planned.end),
                "log_end_offset": positions.to_column(planned.log_end),
                "read_time_ms": planned.read_time_ms,
                "planned_range": planned.planned_range,
            }
            for planned in ranges
        ],
        schema=arrow_schema(pa, positions),
    )


def record_batch(pa, positions: PositionType, partition: PartitionRange, planned: PlannedRange, records):
    """``records`` (tidemark.partitioned_log.LogRecord) as Arrow, each with the aligned step it
    was planned in and that step's G. A step holds positions [its start, its end): a record's
    step is the first whose end is past its position."""
    count = len(records)
    steps = planned.steps
    last = len(steps) - 1
    schema = arrow_schema(pa, positions)
    record_positions, timestamps, keys, values, headers = _columns(records)
    if positions.dense:
        # Offsets: numpy all the way (the Kafka catch-up path is bound by this loop).
        import numpy as np

        offsets = np.array(record_positions, dtype=np.int64)
        ends = np.array([step.end for step in steps], dtype=np.int64)
        which = pa.array(np.minimum(np.searchsorted(ends, offsets, side="right"), last))
        position_column = pa.array(offsets, pa.int64())
    else:
        ends = [step.end for step in steps]
        which = pa.array([min(bisect.bisect_right(ends, position), last) for position in record_positions], pa.int64())
        position_column = pa.array([positions.to_column(position) for position in record_positions], pa.string())
    position_type = schema.field("source_offset").type
    return pa.RecordBatch.from_arrays(
        [
            pa.array([RECORD_ROW] * count, pa.string()),
            pa.array([partition.partition] * count, pa.int32()),
            position_column,
            pa.array(timestamps, pa.int64()),
            pa.array(keys, pa.binary()),
            _headers_column(pa, headers, schema.field("record_headers").type),
            pa.array(values, pa.binary()),
            pa.array([positions.to_column(partition.end)] * count, position_type),
            pa.array([positions.to_column(partition.log_end)] * count, position_type),
            pa.array([partition.read_time_ms] * count, pa.int64()),
            pa.nulls(count, pa.string()),
            pa.nulls(count, pa.string()),
            pa.array([step.seq for step in steps], pa.int64()).take(which),
            pa.array([step.global_watermark_ms for step in steps], pa.int64()).take(which),
        ],
        schema=schema,
    )


def _columns(records) -> tuple:
    """The records' positions, log timestamps, keys, values and headers, as five sequences.
    Kafka's records are named tuples in that order (connectors.kafka_log.RawRecord): one
    transpose in C instead of five Python loops over the records."""
    if not records:
        return [], [], [], [], []
    if isinstance(records[0], tuple):
        return tuple(zip(*records))
    return (
        [r.position for r in records],
        [r.timestamp_ms for r in records],
        [r.key for r in records],
        [r.value for r in records],
        [r.headers for r in records],
    )


def _headers_column(pa, headers, headers_type):
    """The records' headers as Arrow (null for a record without, and for every Kinesis record)."""
    if not any(headers):
        return pa.nulls(len(headers), headers_type)
    return pa.array(
        [None if h is None else [{"key": key, "value": value} for key, value in h] for h in headers], headers_type
    )
