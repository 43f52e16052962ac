"""The source's record rows (spark_jobs.log_source.rows.record_batch): the same Arrow rows
whether the log hands over Kafka's named tuples (one transpose) or records with attributes
(Kinesis's, tidemark.partitioned_log.LogRecord), each with the aligned step it was planned in."""

from __future__ import annotations

from types import SimpleNamespace

import pyarrow as pa

from connectors.kafka_log import RawRecord
from spark_jobs.log_source.planned_reading import PartitionRange
from spark_jobs.log_source.rows import record_batch
from tidemark.log_position import KAFKA_OFFSETS
from tidemark.partitioned_log import LogRecord

# Two aligned steps: offsets [10, 12) in step 4 under G 1,000, [12, 20) in step 5 under G 2,000.
PLANNED = SimpleNamespace(
    steps=(
        SimpleNamespace(end=12, seq=4, global_watermark_ms=1_000),
        SimpleNamespace(end=20, seq=5, global_watermark_ms=2_000),
    )
)
RANGE = PartitionRange(3, 10, 20, 25, 9_999, "{}")


def test_kafkas_named_tuples_and_records_with_attributes_make_the_same_rows():
    fields = [
        (10, 100, b"k0", b"v0", None),
        (11, 101, None, b"v1", (("h", b"x"),)),
        (14, 104, b"k2", None, None),
    ]
    kafka = record_batch(pa, KAFKA_OFFSETS, RANGE, PLANNED, [RawRecord(*f) for f in fields]).to_pylist()
    other = record_batch(pa, KAFKA_OFFSETS, RANGE, PLANNED, [LogRecord(*f) for f in fields]).to_pylist()

    assert kafka == other
    assert [(r["source_offset"], r["log_timestamp_ms"], r["record_key"], r["value"]) for r in kafka] == [
        (10, 100, b"k0", b"v0"),
        (11, 101, None, b"v1"),
        (14, 104, b"k2", None),
    ]
    assert [r["record_headers"] for r in kafka] == [None, [{"key": "h", "value": b"x"}], None]
    assert [(r["step_id"], r["global_watermark_ms"]) for r in kafka] == [(4, 1_000), (4, 1_000), (5, 2_000)]
    assert {(r["source_partition"], r["range_end"], r["log_end_offset"], r["read_time_ms"]) for r in kafka} == {
        (3, 20, 25, 9_999)
    }


def test_no_records_make_no_rows():
    assert record_batch(pa, KAFKA_OFFSETS, RANGE, PLANNED, []).num_rows == 0
