"""The rows the Kinesis source yields, as Arrow: the raw rows of tidemark.planned_range with the
positions as sequence-number keys (tidemark.log_position.position_key), so a 56-digit sequence
number is carried exactly and orders correctly in Spark and Delta.

The same three kinds as the Kafka source's rows (spark_jobs.kafka_source.rows): a ``range`` row
per planned range, the ``record`` rows of each range, and (when decoding) a ``summary`` row per
(partition, aligned step).
"""

from __future__ import annotations

import bisect

from spark_jobs.log_source.planned_reading import PartitionRange, raw_arrow_schema
from tidemark.log_position import position_key
from tidemark.planned_range import RANGE_ROW, RECORD_ROW, PlannedRange


def arrow_schema(pa):
    """The Arrow schema of every row the source yields undecoded: tidemark.planned_range's raw
    columns, positions as string sequence keys."""
    return raw_arrow_schema(pa, pa.string())


def range_batch(pa, ranges: tuple[PartitionRange, ...]):
    """One range row per planned range: the rows that become the shards' ledger rows."""
    return pa.RecordBatch.from_pylist(
        [
            {
                "row_kind": RANGE_ROW,
                "source_partition": planned.partition,
                "source_offset": position_key(planned.start),
                "range_end": position_key(planned.end),
                "log_end_offset": position_key(planned.log_end),
                "read_time_ms": planned.read_time_ms,
                "planned_range": planned.planned_range,
            }
            for planned in ranges
        ],
        schema=arrow_schema(pa),
    )


def record_batch(pa, partition: PartitionRange, planned: PlannedRange, records):
    """``records`` (connectors.kinesis_log.KinesisRecord) as Arrow, each with the aligned step it
    was planned in and that step's G. The partition key is the record key."""
    steps = planned.steps
    ends = [step.end for step in steps]
    # A step holds sequence numbers [its start, its end): the first step whose end > the sequence.
    which = [min(bisect.bisect_right(ends, record.sequence), len(steps) - 1) for record in records]
    count = len(records)
    return pa.RecordBatch.from_arrays(
        [
            pa.array([RECORD_ROW] * count, pa.string()),
            pa.array([partition.partition] * count, pa.int32()),
            pa.array([position_key(record.sequence) for record in records], pa.string()),
            pa.array([record.arrival_ms for record in records], pa.int64()),
            pa.array([record.partition_key.encode() for record in records], pa.binary()),
            pa.array([record.data for record in records], pa.binary()),
            pa.array([position_key(partition.end)] * count, pa.string()),
            pa.array([position_key(partition.log_end)] * count, pa.string()),
            pa.array([partition.read_time_ms] * count, pa.int64()),
            pa.nulls(count, pa.string()),
            pa.nulls(count, pa.string()),
            pa.array([steps[i].seq for i in which], pa.int64()),
            pa.array([steps[i].global_watermark_ms for i in which], pa.int64()),
        ],
        schema=arrow_schema(pa),
    )
