"""The Kinesis source's options as one typed value, the ``spec`` option of ``tidemark_kinesis``
(see spark_jobs.source_spec): encoded once by the job, decoded once when the query builds its
reader, then carried to the tasks with the pickled reader."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

import msgspec

from spark_jobs.log_source.decode_stage import DecodeSpec
from spark_jobs.source_spec import Count, Milliseconds, PositiveMilliseconds, spec_from_options, spec_options
from tidemark.partition_limit import DEFAULT_MAX_PARTITIONS

SOURCE_NAME = "tidemark_kinesis"

_Fraction = Annotated[float, msgspec.Meta(ge=0.0, lt=1.0)]


class KinesisSourceOptions(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What a query asks of the source. Durations in milliseconds; positions are sequence
    numbers (Python ints of any size: msgspec carries them exactly); partitions are shards
    (tidemark.shard_lineage.partition_of).

    The same fields as the Kafka source where the meaning is the same (see
    spark_jobs.kafka_source.options): bounded runs (``offset_bounds``: sequence ranges
    [start, end) per shard), the pinned G, the resume point, the chaos switch
    (``frozen_partitions``), the decoder, the read tasks and the partition limit. Kinesis
    credentials are not options: boto3's default chain (the environment) gives them.

    ``max_calls_per_second``: GetRecords per shard this reader allows itself (Kinesis allows 5,
    shared by every consumer). ``injected_throttling``: the fraction of GetRecords calls the
    reader answers with a throttling error of its own before asking Kinesis (a test's chaos
    switch: a loopback Kinesis never throttles); 0 in production.
    """

    stream: str
    region: str
    endpoint: str | None = None
    max_records_per_batch: Count | None = None
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
    max_calls_per_second: Annotated[float, msgspec.Meta(gt=0.0, le=5.0)] = 5.0
    injected_throttling: _Fraction = 0.0

    def __post_init__(self):
        for required in ("stream", "region"):
            if not getattr(self, required):
                raise ValueError(f"Option '{required}' is required.")
        for partition, (start, end) in (self.offset_bounds or {}).items():
            if partition < 0 or start < 0 or end <= start:
                raise ValueError(
                    f"Option 'offset_bounds': shard partition {partition} has no sequence numbers in [{start}, {end})."
                )
        if any(partition < 0 for partition in self.frozen_partitions):
            raise ValueError(
                f"Option 'frozen_partitions' must be partition numbers, got {list(self.frozen_partitions)}."
            )

    def to_options(self) -> dict[str, str]:
        """Spark's options for this value: ``.options(**options.to_options())``."""
        return spec_options(self)

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> KinesisSourceOptions:
        """The value ``to_options`` wrote; ValueError naming the bad field."""
        return spec_from_options(options, cls, SOURCE_NAME)
