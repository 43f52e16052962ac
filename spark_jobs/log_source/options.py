"""The log source's options as one typed value, the ``spec`` option of ``tidemark_log`` (see
spark_jobs.source_spec): encoded once by the job, decoded once when the query builds its reader,
then carried to the tasks with the pickled reader."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import msgspec

from spark_jobs.log_source.decode_stage import DecodeSpec
from spark_jobs.source_spec import Count, Milliseconds, PositiveMilliseconds, spec_from_options, spec_options
from tidemark.log_connection import LogConnection
from tidemark.partition_limit import DEFAULT_MAX_PARTITIONS

SOURCE_NAME = "tidemark_log"


class LogSourceOptions(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What a query asks of the source. Durations in milliseconds; positions are the log's
    (tidemark.log_position: Kafka offsets, Kinesis sequence numbers as Python ints of any size,
    which msgspec carries exactly); partitions are the log's (a Kinesis shard is numbered by its id).

    ``connection``: the log (tidemark.log_connection), the only part that differs by kind; it
    holds no credential. ``starting``: where a partition with no checkpoint starts, its earliest
    retained position or its end. The bounded modes (recovery, backfill) set ``offset_bounds``:
    only those partitions, only positions [start, end), and the run ends there.
    ``pinned_global_watermark_ms`` holds G at a given value for the whole run (no record read can
    move it, so no hour is sealed). ``resume_from`` is the state to start from when there is no
    checkpoint (see tidemark.resume_point). ``frozen_partitions`` is the chaos switch: those
    partitions are planned as usual but never read, as a stalled consumer would leave them.
    ``accepted_losses``: ranges lost to retention that a person accepted, (partition, start, end)
    (tidemark.accepted_loss): a live query passes over exactly those, and stops for any other loss.

    ``decode``: read() decodes what it reads with it (the persist job); None: read() yields raw
    rows (tidemark.planned_range.raw_record_schema). ``read_tasks`` is the most Spark tasks a
    batch reads with (tidemark.read_tasks packs the partitions' ranges into them);
    ``max_partitions`` the most partitions the log may have (source.max_partitions): a log past
    it fails planning, naming the key.

    Field constraints are checked when the value is decoded (``from_options``: the query's
    start); the rules across fields when it is built as well.
    """

    connection: LogConnection
    starting: Literal["earliest", "latest"] = "earliest"
    max_records_per_batch: Count | None = None
    # The most batches this query plans, but those that register partitions or pass over an
    # accepted loss (a live available_now run's turn); None: no bound.
    max_batches: Count | None = None
    alignment: bool = True
    max_out_of_orderness_ms: Milliseconds = 0
    max_drift_ms: PositiveMilliseconds = 900_000
    idle_timeout_ms: PositiveMilliseconds = 300_000
    max_future_skew_ms: Milliseconds = 300_000
    feedback_dir: str | None = None
    offset_bounds: dict[int, tuple[int, int]] | None = None
    pinned_global_watermark_ms: Milliseconds | None = None
    resume_from: dict | None = None
    frozen_partitions: tuple[int, ...] = ()
    decode: DecodeSpec | None = None
    read_tasks: Count = 1
    max_partitions: Count = DEFAULT_MAX_PARTITIONS
    accepted_losses: tuple[tuple[int, int, int], ...] = ()

    def __post_init__(self):
        position = self.connection.position_type.name
        for partition, (start, end) in (self.offset_bounds or {}).items():
            if partition < 0 or start < 0 or end <= start:
                raise ValueError(
                    f"Option 'offset_bounds': partition {partition} has no {position}s in [{start}, {end})."
                )
        if any(partition < 0 for partition in self.frozen_partitions):
            raise ValueError(
                f"Option 'frozen_partitions' must be partition numbers, got {list(self.frozen_partitions)}."
            )

    def to_options(self) -> dict[str, str]:
        """Spark's options for this value: ``.options(**options.to_options())``."""
        return spec_options(self)

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> LogSourceOptions:
        """The value ``to_options`` wrote; ValueError naming the bad field."""
        return spec_from_options(options, cls, SOURCE_NAME)
