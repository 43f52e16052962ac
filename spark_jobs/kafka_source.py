"""tidemark's Kafka streaming source, on the PySpark 4.2 Python Data Source API.

Reads exact offset ranges per partition. Every micro-batch yields, for every partition, one
``range`` row (the planned range [start, end), the log end seen, the read time) followed by that
range's ``record`` rows. The range rows let the persist job write one ledger row per batch and
partition even when a partition had nothing to read, in the same idempotent commit as the data.

Offsets (checkpointed by Spark) look like::

    {"topic": "telemetry", "read_time_ms": 1763800000000,
     "partitions": {"0": {"position": 120, "log_end": 500}, ...}}

``position`` is the next offset to read. ``read_time_ms`` is when the batch was planned; it is the
"now" of the future guard, fixed in the offset so a replayed batch decides exactly as the first run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterator

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from tidemark.record_count_slices import plan_record_count_slices

SOURCE_NAME = "tidemark_kafka"

RAW_RECORD_SCHEMA = (
    "row_kind STRING, source_partition INT, source_offset BIGINT, log_timestamp_ms BIGINT, "
    "record_key BINARY, value BINARY, range_end BIGINT, log_end_offset BIGINT, read_time_ms BIGINT"
)
RANGE_ROW = "range"
RECORD_ROW = "record"


@dataclass(frozen=True)
class KafkaSourceOptions:
    """The source's string options, parsed once; a bad option fails when the query starts."""

    bootstrap_servers: str
    topic: str
    starting_offsets: str
    max_records_per_batch: int | None

    @classmethod
    def parse(cls, options: dict) -> "KafkaSourceOptions":
        for required in ("bootstrap_servers", "topic"):
            if not options.get(required):
                raise ValueError(f"Option '{required}' is required.")
        starting = options.get("starting_offsets", "earliest")
        if starting not in ("earliest", "latest"):
            raise ValueError(f"Option 'starting_offsets' must be earliest or latest, got {starting!r}.")
        limit = options.get("max_records_per_batch")
        if limit is not None:
            if not str(limit).isdigit() or int(limit) < 1:
                raise ValueError(f"Option 'max_records_per_batch' must be a whole number >= 1, got {limit!r}.")
            limit = int(limit)
        return cls(options["bootstrap_servers"], options["topic"], starting, limit)


@dataclass(frozen=True)
class PartitionRange(InputPartition):
    """One Spark task: offsets [start, end) of one Kafka partition (start == end: nothing to read)."""

    bootstrap_servers: str
    topic: str
    partition: int
    start: int
    end: int
    log_end: int
    read_time_ms: int


class KafkaLogSource(DataSource):
    """Factory registered as ``tidemark_kafka``: ``spark.readStream.format("tidemark_kafka")``."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return RAW_RECORD_SCHEMA

    def streamReader(self, schema) -> "KafkaLogReader":
        return KafkaLogReader(KafkaSourceOptions.parse(dict(self.options)))


class KafkaLogReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans and reads offset ranges. Lives in the driver for the query's life (planning), and is
    pickled to the tasks for ``read`` (which touches no driver state)."""

    def __init__(self, options: KafkaSourceOptions, clock=time.time):
        self._options = options
        self._clock = clock
        self._log = None
        # Set by prepareForTriggerAvailableNow: the log ends when the run started, never passed.
        self._available_now_target: dict[int, int] | None = None

    # -- planning (driver) ---------------------------------------------------------------------
    def _kafka(self):
        if self._log is None:
            from spark_jobs.kafka_log import KafkaLog

            self._log = KafkaLog(self._options.bootstrap_servers, self._options.topic)
        return self._log

    def initialOffset(self) -> dict:
        log = self._kafka()
        partitions = {}
        for partition in log.partition_ids():
            bounds = log.bounds(partition)
            position = bounds.earliest if self._options.starting_offsets == "earliest" else bounds.end
            partitions[str(partition)] = {"position": position, "log_end": bounds.end}
        return {"topic": self._options.topic, "read_time_ms": self._now_ms(), "partitions": partitions}

    def getDefaultReadLimit(self) -> ReadLimit:
        if self._options.max_records_per_batch is None:
            return ReadAllAvailable()
        return ReadMaxRows(self._options.max_records_per_batch)

    def prepareForTriggerAvailableNow(self) -> None:
        log = self._kafka()
        self._available_now_target = {p: log.bounds(p).end for p in log.partition_ids()}

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        if start.get("topic") != self._options.topic:
            raise ValueError(
                f"the checkpoint belongs to topic {start.get('topic')!r}, not {self._options.topic!r}: "
                "use a new checkpoint location for a new topic"
            )
        log = self._kafka()
        known = {int(p): state for p, state in start["partitions"].items()}
        log_ends = self._log_ends(log)
        discovered = sorted(set(log_ends) - set(known))
        if discovered:
            # A partition added to the topic: register it at its earliest offset in a batch of its
            # own, so its first range has a known start like every other range.
            partitions = dict(start["partitions"])
            for partition in discovered:
                partitions[str(partition)] = {"position": log.bounds(partition).earliest, "log_end": log_ends[partition]}
            return {**start, "read_time_ms": self._now_ms(), "partitions": partitions}

        positions = {p: state["position"] for p, state in known.items()}
        max_records = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        ends = plan_record_count_slices(positions, log_ends, max_records)
        if ends == positions:
            return start  # nothing new: Spark runs no batch
        return {
            "topic": self._options.topic,
            "read_time_ms": self._now_ms(),
            "partitions": {str(p): {"position": ends[p], "log_end": log_ends.get(p, ends[p])} for p in sorted(ends)},
        }

    def _log_ends(self, log) -> dict[int, int]:
        ends = {p: log.bounds(p).end for p in log.partition_ids()}
        if self._available_now_target is not None:
            ends = {p: min(end, self._available_now_target.get(p, end)) for p, end in ends.items()}
        return ends

    def reportLatestOffset(self) -> dict | None:
        log = self._kafka()
        return {"topic": self._options.topic, "log_ends": {str(p): log.bounds(p).end for p in log.partition_ids()}}

    def partitions(self, start: dict, end: dict) -> list[PartitionRange]:
        ranges = []
        for partition, state in sorted(end["partitions"].items(), key=lambda item: int(item[0])):
            first = start["partitions"].get(partition, state)["position"]
            ranges.append(
                PartitionRange(
                    self._options.bootstrap_servers,
                    self._options.topic,
                    int(partition),
                    first,
                    state["position"],
                    state["log_end"],
                    end["read_time_ms"],
                )
            )
        return ranges

    def commit(self, end: dict) -> None:
        # Positions are checkpointed by Spark and recorded in the ledger; nothing to commit in Kafka.
        pass

    def stop(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    # -- reading (tasks) -----------------------------------------------------------------------
    def read(self, partition: PartitionRange) -> Iterator:
        import pyarrow as pa

        from spark_jobs.kafka_log import read_range

        yield _range_batch(pa, partition)
        for records in read_range(
            partition.bootstrap_servers, partition.topic, partition.partition, partition.start, partition.end
        ):
            yield _record_batch(pa, partition, records)

    def __getstate__(self):
        # The driver's Kafka client stays in the driver.
        state = dict(self.__dict__)
        state["_log"] = None
        return state


def _arrow_schema(pa):
    return pa.schema(
        [
            ("row_kind", pa.string()),
            ("source_partition", pa.int32()),
            ("source_offset", pa.int64()),
            ("log_timestamp_ms", pa.int64()),
            ("record_key", pa.binary()),
            ("value", pa.binary()),
            ("range_end", pa.int64()),
            ("log_end_offset", pa.int64()),
            ("read_time_ms", pa.int64()),
        ]
    )


def _range_batch(pa, partition: PartitionRange):
    return pa.RecordBatch.from_pylist(
        [
            {
                "row_kind": RANGE_ROW,
                "source_partition": partition.partition,
                "source_offset": partition.start,
                "log_timestamp_ms": None,
                "record_key": None,
                "value": None,
                "range_end": partition.end,
                "log_end_offset": partition.log_end,
                "read_time_ms": partition.read_time_ms,
            }
        ],
        schema=_arrow_schema(pa),
    )


def _record_batch(pa, partition: PartitionRange, records):
    count = len(records)
    return pa.RecordBatch.from_arrays(
        [
            pa.array([RECORD_ROW] * count, pa.string()),
            pa.array([partition.partition] * count, pa.int32()),
            pa.array([r.offset for r in records], pa.int64()),
            pa.array([r.timestamp_ms for r in records], pa.int64()),
            pa.array([r.key for r in records], pa.binary()),
            pa.array([r.value for r in records], pa.binary()),
            pa.array([partition.end] * count, pa.int64()),
            pa.array([partition.log_end] * count, pa.int64()),
            pa.array([partition.read_time_ms] * count, pa.int64()),
        ],
        schema=_arrow_schema(pa),
    )
