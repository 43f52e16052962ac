"""The contract between the log source and the persist batch: one partition's share of one batch.

The source plans a batch as a SourceState (where each partition's slice ends, and the event-time
state the batch runs under). Every Spark task of the batch yields, before that partition's
records, one *range row* carrying a ``PlannedRange``; the persist batch routes, seals and writes
the ledger from those rows alone, so a replayed batch decides exactly as its first run.

The raw rows a source yields (``RAW_RECORD_SCHEMA``) are of two kinds: ``RANGE_ROW`` (one per
partition and batch, ``planned_range`` holds ``PlannedRange.to_text()``) and ``RECORD_ROW`` (one per
data record of the range, ``step_id`` the aligned step it was planned in (StepRange.seq: the
ledger's step id) and ``global_watermark_ms`` that step's G, the G it is routed under unless live
routed it). A decoding source adds ``SUMMARY_ROW``s after a partition's records, ``step_counts``
holding ``StepCounts.to_text()`` (tidemark.step_counts). A column a kind does not use is null.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from tidemark.log_position import KAFKA_OFFSETS, PositionType
from tidemark.source_state import PartitionState, SourceState

# A record's headers, as Spark's Kafka source gives them (includeHeaders): in the order written,
# a key may repeat, a value may be null.
HEADERS_SQL_TYPE = "ARRAY<STRUCT<key: STRING, value: BINARY>>"


def raw_record_schema(positions: PositionType = KAFKA_OFFSETS) -> str:
    """The raw rows' DDL; ``source_offset``, ``range_end`` and ``log_end_offset`` are positions
    of the stream's type (tidemark.log_position: BIGINT offsets, or Kinesis sequence keys)."""
    position = positions.sql_type
    return (
        f"row_kind STRING, source_partition INT, source_offset {position}, log_timestamp_ms BIGINT, "
        f"record_key BINARY, record_headers {HEADERS_SQL_TYPE}, value BINARY, range_end {position}, log_end_offset {position}, read_time_ms BIGINT, "
        "planned_range STRING, step_counts STRING, step_id BIGINT, global_watermark_ms BIGINT"
    )


RAW_RECORD_SCHEMA = raw_record_schema()
RANGE_ROW = "range"
RECORD_ROW = "record"


@dataclass(frozen=True)
class StepRange:
    """Offsets [start, end) of one partition read in one aligned step of a batch: the step's
    number ``seq`` (its step id in the ledger), the G it is routed under and its target T, W_p
    before it and, when it was cut at T, that bound (ms, UTC)."""

    seq: int
    start: int
    end: int
    global_watermark_ms: int | None
    target_ms: int | None
    watermark_ms: int | None
    next_record_at_least_ms: int | None

    def to_json(self) -> list:
        return [
            self.seq,
            self.start,
            self.end,
            self.global_watermark_ms,
            self.target_ms,
            self.watermark_ms,
            self.next_record_at_least_ms,
        ]

    @classmethod
    def from_json(cls, data: list) -> StepRange:
        return cls(*data)


@dataclass(frozen=True)
class PlannedRange:
    """Offsets [start_offset, state.position) of one partition, planned in batch ``plan_seq``.

    ``state`` is the partition's state once the batch is done (its position is the range's end;
    its watermark_ms is W_p *before* the batch's records). The batch fields are the same in every
    range of a batch: G the records are routed under, the G before it (hours sealed by the step
    from one to the other), T when slicing by event time, and the read time (the "now" of the
    future guard). Times in ms since the epoch, UTC.

    ``steps``: the range cut by the batch's aligned steps (see tidemark.source_state), the steps
    in which this partition read, in order, and always the batch's last step (possibly empty).
    A one-step batch has one: the whole range under the batch's G. The global_watermark_ms of
    the range itself is the last step's.
    """

    partition: int
    start_offset: int
    plan_seq: int
    slicing: str
    read_time_ms: int
    global_watermark_ms: int | None
    previous_global_watermark_ms: int | None
    target_ms: int | None
    state: PartitionState
    steps: tuple[StepRange, ...] = ()

    @property
    def end_offset(self) -> int:
        return self.state.position

    @property
    def reads(self) -> bool:
        """Whether the range reads anything (its end is past its start), for any position type."""
        return self.state.position > self.start_offset

    @property
    def offsets(self) -> int:
        """Offsets in the range; data records may be fewer (markers, aborted, compacted)."""
        return self.state.position - self.start_offset

    @classmethod
    def of_batch(cls, before: SourceState, after: SourceState) -> list[PlannedRange]:
        """The ranges of the batch planned from ``before`` to ``after``, ordered by partition.

        A partition new in ``after`` starts at its own position: its first range is empty.
        """
        ranges = []
        for partition, state in sorted(after.partitions.items()):
            start = before.partitions.get(partition, state).position
            ranges.append(
                cls(
                    partition=partition,
                    start_offset=start,
                    plan_seq=after.plan_seq,
                    slicing=after.slicing,
                    read_time_ms=after.read_time_ms,
                    global_watermark_ms=after.global_watermark_ms,
                    previous_global_watermark_ms=before.global_watermark_ms,
                    target_ms=after.target_ms,
                    state=state,
                    steps=_step_ranges(after, partition, start),
                )
            )
        return ranges

    def to_text(self) -> str:
        return json.dumps(
            {
                "partition": self.partition,
                "start_offset": self.start_offset,
                "plan_seq": self.plan_seq,
                "slicing": self.slicing,
                "read_time_ms": self.read_time_ms,
                "global_watermark_ms": self.global_watermark_ms,
                "previous_global_watermark_ms": self.previous_global_watermark_ms,
                "target_ms": self.target_ms,
                "state": self.state.to_json(),
                "steps": [step.to_json() for step in self.steps],
            }
        )

    @classmethod
    def from_text(cls, text: str) -> PlannedRange:
        data = json.loads(text)
        return cls(
            partition=data["partition"],
            start_offset=data["start_offset"],
            plan_seq=data["plan_seq"],
            slicing=data["slicing"],
            read_time_ms=data["read_time_ms"],
            global_watermark_ms=data["global_watermark_ms"],
            previous_global_watermark_ms=data["previous_global_watermark_ms"],
            target_ms=data["target_ms"],
            state=PartitionState.from_json(data["state"]),
            steps=tuple(StepRange.from_json(step) for step in data.get("steps", ())),
        )


def _step_ranges(after: SourceState, partition: int, start: int) -> tuple[StepRange, ...]:
    """The steps of the batch ``after`` in which ``partition`` (from offset ``start``) read, and
    the last step in any case (its range possibly empty)."""
    state = after.partitions[partition]
    end = state.position
    if not after.steps:
        return (
            StepRange(
                after.plan_seq,
                start,
                end,
                after.global_watermark_ms,
                after.target_ms,
                state.watermark_ms,
                state.next_record_at_least_ms,
            ),
        )
    ranges, position = [], start
    first_seq = after.plan_seq - len(after.steps) + 1
    last = len(after.steps) - 1
    for index, step in enumerate(after.steps):
        step_end = max(min(step.ends.get(partition, position), end), position)
        if index == last:
            # The last step ends where the batch does (also for offsets past the steps' ends: a
            # partition discovered or unfrozen in this batch), with the batch's own state.
            ranges.append(
                StepRange(
                    first_seq + index,
                    position,
                    end,
                    step.global_watermark_ms,
                    step.target_ms,
                    state.watermark_ms,
                    state.next_record_at_least_ms,
                )
            )
        elif step_end > position:
            ranges.append(
                StepRange(
                    first_seq + index,
                    position,
                    step_end,
                    step.global_watermark_ms,
                    step.target_ms,
                    step.watermarks.get(partition),
                    step.cuts.get(partition),
                )
            )
            position = step_end
    return tuple(ranges)
