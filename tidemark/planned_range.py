"""The contract between the log source and the persist batch: one partition's share of one batch.

The source plans a batch as a SourceState (where each partition's slice ends, and the event-time
state the batch runs under). Every Spark task of the batch yields, before that partition's
records, one *range row* carrying a ``PlannedRange``; the persist batch routes, seals and writes
the ledger from those rows alone, so a replayed batch decides exactly as its first run.

The raw rows a source yields (``RAW_RECORD_SCHEMA``) are of two kinds: ``RANGE_ROW`` (one per
partition and batch, ``range_state`` holds ``PlannedRange.to_text()``) and ``RECORD_ROW`` (one per
data record of the range, ``range_state`` null).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from tidemark.source_state import PartitionState, SourceState

RAW_RECORD_SCHEMA = (
    "row_kind STRING, source_partition INT, source_offset BIGINT, log_timestamp_ms BIGINT, "
    "record_key BINARY, value BINARY, range_end BIGINT, log_end_offset BIGINT, read_time_ms BIGINT, "
    "range_state STRING"
)
RANGE_ROW = "range"
RECORD_ROW = "record"


@dataclass(frozen=True)
class PlannedRange:
    """Offsets [start_offset, state.position) of one partition, planned in batch ``plan_seq``.

    ``state`` is the partition's state once the batch is done (its position is the range's end;
    its watermark_ms is W_p *before* the batch's records). The batch fields are the same in every
    range of a batch: G the records are routed under, the G before it (hours sealed by the step
    from one to the other), T when slicing by event time, and the read time (the "now" of the
    future guard). Times in ms since the epoch, UTC.
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

    @property
    def end_offset(self) -> int:
        return self.state.position

    @property
    def offsets(self) -> int:
        """Offsets in the range; data records may be fewer (markers, aborted, compacted)."""
        return self.state.position - self.start_offset

    @classmethod
    def of_batch(cls, before: SourceState, after: SourceState) -> list["PlannedRange"]:
        """The ranges of the batch planned from ``before`` to ``after``, ordered by partition.

        A partition new in ``after`` starts at its own position: its first range is empty.
        """
        return [
            cls(
                partition=partition,
                start_offset=before.partitions.get(partition, state).position,
                plan_seq=after.plan_seq,
                slicing=after.slicing,
                read_time_ms=after.read_time_ms,
                global_watermark_ms=after.global_watermark_ms,
                previous_global_watermark_ms=before.global_watermark_ms,
                target_ms=after.target_ms,
                state=state,
            )
            for partition, state in sorted(after.partitions.items())
        ]

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
            }
        )

    @classmethod
    def from_text(cls, text: str) -> "PlannedRange":
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
        )
