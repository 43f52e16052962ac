"""What tidemark's two log sources (spark_jobs.kafka_source, spark_jobs.kinesis_source) share:
the range a task reads, the summary rows, and the planning around tidemark.batch_planner.

Each source knows its log (how to list partitions, read ahead, read a range); the rest of a
micro-batch's life is this: the planner built from the options, the read limit, the event-time
feedback of the batch before, and the two switches applied to a planned batch (a pinned G in
recovery, frozen partitions in the chaos tests).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows

from tidemark.batch_planner import BatchPlanner
from tidemark.chaos_freeze import freeze_partitions
from tidemark.pinned_watermark import pin_global_watermark
from tidemark.source_state import SourceState
from tidemark.step_counts import SUMMARY_ROW


@dataclass(frozen=True)
class PartitionRange:
    """Positions [start, end) of one partition in a batch (start == end: nothing to read)."""

    partition: int
    start: int
    end: int
    log_end: int
    read_time_ms: int
    # The planned range as text (tidemark.planned_range.PlannedRange): carried in the range row
    # so the persist job routes and seals with exactly the planned state.
    planned_range: str


def headers_arrow_type(pa):
    """tidemark.planned_range.HEADERS_SQL_TYPE as Arrow."""
    return pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def raw_arrow_schema(pa, position):
    """tidemark.planned_range.raw_record_schema as Arrow, its three position columns of Arrow type
    ``position`` (Kafka: int64 offsets; Kinesis: string sequence keys)."""
    return pa.schema(
        [
            ("row_kind", pa.string()),
            ("source_partition", pa.int32()),
            ("source_offset", position),
            ("log_timestamp_ms", pa.int64()),
            ("record_key", pa.binary()),
            ("record_headers", headers_arrow_type(pa)),
            ("value", pa.binary()),
            ("range_end", position),
            ("log_end_offset", position),
            ("read_time_ms", pa.int64()),
            ("planned_range", pa.string()),
            ("step_counts", pa.string()),
            ("step_id", pa.int64()),
            ("global_watermark_ms", pa.int64()),
        ]
    )


def summary_batch(pa, counts: list, schema):
    """One summary row per tidemark.step_counts.StepCounts (its text in ``step_counts``), in the
    source's Arrow ``schema``."""
    return pa.RecordBatch.from_pylist(
        [
            {
                "row_kind": SUMMARY_ROW,
                "source_partition": step.partition,
                "step_id": step.seq,
                "step_counts": step.to_text(),
            }
            for step in counts
        ],
        schema=schema,
    )


class PlannedReading:
    """The planning both readers do the same way; ``self._options`` is the source's options."""

    def _new_planner(self, options, clock, **log_settings) -> BatchPlanner:
        return BatchPlanner(
            options.max_out_of_orderness_ms,
            options.max_drift_ms,
            options.idle_timeout_ms,
            options.max_future_skew_ms,
            options.alignment,
            clock,
            **log_settings,
        )

    def getDefaultReadLimit(self) -> ReadLimit:
        if self._options.max_records_per_batch is None:
            return ReadAllAvailable()
        return ReadMaxRows(self._options.max_records_per_batch)

    def _feedback(self, plan_seq: int) -> dict:
        """W_p after the batch ``plan_seq``, as the persist job reported it (none before the first)."""
        if self._options.feedback_dir is None or plan_seq < 0:
            return {}
        from spark_jobs.log_source.event_time_feedback import read_feedback

        return read_feedback(self._options.feedback_dir, plan_seq) or {}

    def _switched(self, previous: SourceState, planned: SourceState, log_ends: dict[int, int]) -> SourceState:
        """``planned`` with a pinned G held (recovery) and frozen partitions left where they were
        (the chaos switch); ``previous`` when nothing is left to do."""
        if planned is not previous and self._options.pinned_global_watermark_ms is not None:
            planned = pin_global_watermark(previous, planned, log_ends, self._options.pinned_global_watermark_ms)
        if planned is not previous and self._options.frozen_partitions:
            planned = freeze_partitions(previous, planned, self._options.frozen_partitions)
        return planned

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)
