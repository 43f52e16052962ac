"""tidemark's Kafka streaming source, on the PySpark 4.2 Python Data Source API.

Reads exact offset ranges per partition. Every micro-batch yields, for every partition, one
``range`` row (the planned range [start, end), the log end seen, the read time) followed by that
range's ``record`` rows, each with the aligned step of the batch it was planned in and the G of
that step (a batch may pack several steps, see tidemark.batch_planner.plan_batch). The range
rows let the persist job write ledger rows for every partition even when a partition had
nothing to read, in the same idempotent commit as the data. When the source decodes (the persist
job), each partition's records are followed by one ``summary`` row per aligned step they were
planned in: what they held, counted while decoding (tidemark.step_counts).

Planning is tidemark.batch_planner.BatchPlanner: with alignment, every batch admits from each
partition only records with log timestamp < T = G + max_drift (Kafka's offsetsForTimes). The end
offset of a batch is a tidemark.source_state.SourceState, checkpointed by Spark::

    {"topic": "telemetry", "plan_seq": 7, "read_time_ms": 1763800000000, "slicing": "event_time",
     "global_watermark_ms": ..., "target_ms": ...,
     "partitions": {"0": {"position": 120, "log_end": 500, "watermark_ms": ..., "status": "ACTIVE",
                          "last_produced_ms": ..., "next_record_at_least_ms": ...,
                          "open_transaction": null}, ...}}

so each partition's position, W_p and status, and G survive restarts. ``log_end`` is the readable
end: reading is read_committed, so it is Kafka's last stable offset, and ranges never reach into a
transaction that is still open. Offsets are not records (markers, aborted transactions, compacted
offsets): a range of N offsets may yield fewer than N records, or none. ``read_time_ms`` is the "now"
of the future guard, fixed in the offset so a replayed batch decides exactly as the first run.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from dataclasses import dataclass

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from spark_jobs.kafka_source.options import SOURCE_NAME, KafkaSourceOptions
from spark_jobs.kafka_source.rows import arrow_schema, range_batch, record_batch
from spark_jobs.log_source.planned_reading import PartitionRange, PlannedReading, summary_batch
from tidemark.event_time_text import format_event_time
from tidemark.partition_limit import check_partition_limit
from tidemark.partition_status import PartitionStatus
from tidemark.planned_range import RAW_RECORD_SCHEMA, PlannedRange
from tidemark.source_state import PartitionState, SourceState


@dataclass(frozen=True)
class ReadTask(InputPartition):
    """One Spark task: the ranges of several partitions (tidemark.read_tasks), read by one reader."""

    bootstrap_servers: str
    topic: str
    ranges: tuple[PartitionRange, ...]


class KafkaLogSource(DataSource):
    """Factory registered as ``tidemark_kafka``: ``spark.readStream.format("tidemark_kafka")``."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        decode = self._spec().decode
        return RAW_RECORD_SCHEMA if decode is None else decode.schema()

    def streamReader(self, schema) -> KafkaLogReader:
        return KafkaLogReader(self._spec())

    def _spec(self) -> KafkaSourceOptions:
        """The ``spec`` option, decoded on first use (it fails the query's start, naming the
        field, when it is not valid) and kept: schema() and streamReader() share one value."""
        if getattr(self, "_decoded_spec", None) is None:
            self._decoded_spec = KafkaSourceOptions.from_options(self.options)
        return self._decoded_spec


class KafkaLogReader(PlannedReading, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans and reads offset ranges. Lives in the driver for the query's life (planning), and is
    pickled to the tasks for ``read`` (which touches no driver state)."""

    def __init__(self, options: KafkaSourceOptions, clock=time.time):
        self._options = options
        self._planner = self._new_planner(
            options, clock, open_transaction_timeout_ms=options.open_transaction_timeout_ms
        )
        self._clock = clock
        self._log = None
        # The readable ends the last planning saw, for reportLatestOffset (called right after it).
        self._seen_ends: dict[int, int] | None = None
        # Set by prepareForTriggerAvailableNow: the log ends when the run started, never passed.
        self._available_now_target: dict[int, int] | None = None

    # -- planning (driver) ---------------------------------------------------------------------
    def _kafka(self):
        if self._log is None:
            from connectors.kafka_log import KafkaLog

            self._log = KafkaLog(self._options.bootstrap_servers, self._options.topic)
        return self._log

    def initialOffset(self) -> dict:
        """Where a query without a checkpoint starts: the bounds' starts in a bounded run; the
        state resumed from the lake (``resume_from``) when the tables already hold the stream;
        else the log's earliest (or latest) offsets."""
        log = self._kafka()
        if self._options.resume_from is not None:
            resumed = SourceState.from_offset(self._options.resume_from)
            self._refuse_retention_loss(resumed, log.partition_bounds(self._partition_ids(log)))
            return dataclasses.replace(resumed, read_time_ms=self._now_ms()).to_offset(self._options.topic)
        positions, log_ends = {}, {}
        for partition, bounds in log.partition_bounds(self._partition_ids(log)).items():
            if self._options.offset_bounds is not None:
                start, end = self._options.offset_bounds[partition]
                if start < bounds.earliest:
                    raise ValueError(
                        f"offsets [{start}, {bounds.earliest}) of partition {partition} of topic {self._options.topic!r} "
                        "have left the log (retention): they cannot be read any more"
                    )
                positions[partition], log_ends[partition] = start, min(end, bounds.end)
                continue
            positions[partition] = bounds.earliest if self._options.starting_offsets == "earliest" else bounds.end
            log_ends[partition] = bounds.end
        initial = self._planner.initial(positions, log_ends, log)
        if self._options.pinned_global_watermark_ms is not None:
            initial = dataclasses.replace(initial, global_watermark_ms=self._options.pinned_global_watermark_ms)
        return initial.to_offset(self._options.topic)

    def _partition_ids(self, log) -> list[int]:
        """The partitions this query reads: the bounded ones, or all of the topic's (never more
        than max_partitions)."""
        topic_partitions = log.partition_ids()
        check_partition_limit(self._options.topic, len(topic_partitions), self._options.max_partitions)
        if self._options.offset_bounds is None:
            return topic_partitions
        missing = sorted(set(self._options.offset_bounds) - set(topic_partitions))
        if missing:
            raise ValueError(f"topic {self._options.topic!r} has no partition {missing[0]}")
        return sorted(self._options.offset_bounds)

    def prepareForTriggerAvailableNow(self) -> None:
        log = self._kafka()
        self._available_now_target = {p: b.end for p, b in log.partition_bounds(self._partition_ids(log)).items()}

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """Plan the next batch. ReadMaxRows caps its records; ReadAllAvailable lifts the cap, but
        alignment still slices at T: it is an event-time rule, not a read limit."""
        if start.get("topic") != self._options.topic:
            raise ValueError(
                f"the checkpoint belongs to topic {start.get('topic')!r}, not {self._options.topic!r}: "
                "use a new checkpoint location for a new topic"
            )
        previous = SourceState.from_offset(start)
        log = self._kafka()
        bounds = log.partition_bounds(self._partition_ids(log))
        self._refuse_retention_loss(previous, bounds)
        log_ends, unstable_ends = self._log_ends(bounds)
        discovered = sorted(set(log_ends) - set(previous.partitions))
        if discovered:
            # A partition added to the topic: register it at its earliest offset in a batch of its
            # own, so its first range has a known start like every other range.
            partitions = dict(previous.partitions)
            for partition in discovered:
                earliest = bounds[partition].earliest
                partitions[partition] = PartitionState(
                    earliest, log_ends[partition], None, PartitionStatus.ACTIVE, self._now_ms()
                )
            grown = SourceState(
                previous.plan_seq + 1,
                self._now_ms(),
                previous.slicing,
                previous.global_watermark_ms,
                previous.target_ms,
                partitions,
            )
            return grown.to_offset(self._options.topic)

        feedback = self._feedback(previous.plan_seq)
        max_records = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        planned = self._planner.plan_batch(previous, log_ends, feedback, log, max_records, unstable_ends)
        planned = self._switched(previous, planned, log_ends)
        if planned is previous:
            return start
        self._log_open_transactions(previous, planned)
        return planned.to_offset(self._options.topic)

    def _refuse_retention_loss(self, state: SourceState, bounds: dict) -> None:
        """Stop, naming the exact offsets, when a partition's next offsets have left the log
        ({partition: LogBounds}): planning from the earliest retained offset instead would jump
        over them silently (tidemark.retention_loss). Logged as well as raised: the log line is
        what a person finds first, the error is what fails the run."""
        import logging

        from connectors.kafka_log import RetentionLossError
        from tidemark.retention_loss import lost_offsets, retention_loss_message

        lost = lost_offsets(state.positions(), {p: b.earliest for p, b in bounds.items()})
        if not lost:
            return
        message = retention_loss_message(self._options.topic, lost)
        logging.getLogger("tidemark.source").error(
            {
                "event": "offsets_lost_to_retention",
                "topic": self._options.topic,
                "lost": [range_.to_json() for range_ in lost],
                "detail": message,
            }
        )
        if self._options.feedback_dir:
            from spark_jobs.log_source.retention_stop import write_lost_ranges

            write_lost_ranges(
                self._options.feedback_dir, lost
            )  # for the driver: see spark_jobs.log_source.retention_stop
        raise RetentionLossError(message, lost)

    def _log_open_transactions(self, previous: SourceState, planned: SourceState) -> None:
        """Say when a partition starts or stops being held by an open transaction: silence is the
        one symptom a dead transactional producer has."""
        import logging

        log = logging.getLogger("tidemark.source")
        for partition, state in sorted(planned.partitions.items()):
            before = previous.partitions.get(partition)
            was_held = before is not None and before.open_transaction is not None and before.open_transaction.held
            hold = state.open_transaction
            if hold is not None and hold.held and not was_held:
                log.warning(
                    {
                        "event": "partition_held_by_open_transaction",
                        "topic": self._options.topic,
                        "partition": partition,
                        "stable_offset": hold.stable_offset,
                        "written_end": hold.written_end,
                        "since": format_event_time(hold.since_ms),
                        "detail": f"partition {partition} cannot be read past offset {hold.stable_offset}: a transaction "
                        f"has been open there since {format_event_time(hold.since_ms)} (a producer that died inside a "
                        "transaction?). Its records are read once it commits, never if it aborts.",
                    }
                )
            elif was_held and (hold is None or not hold.held):
                log.info(
                    {
                        "event": "partition_released_by_open_transaction",
                        "topic": self._options.topic,
                        "partition": partition,
                    }
                )

    def _log_ends(self, bounds: dict) -> tuple[dict[int, int], dict[int, tuple[int, int]]]:
        """The readable end of every partition of ``bounds`` ({partition: LogBounds}), capped at
        the available_now target, and the partitions where an open transaction holds the readable
        end below the written end, as {partition: (last stable offset, written end)}, never capped."""
        ends = {p: b.end for p, b in bounds.items()}
        if self._options.offset_bounds is not None:
            ends = {p: min(end, self._options.offset_bounds[p][1]) for p, end in ends.items()}
        if self._available_now_target is not None:
            ends = {p: min(end, self._available_now_target.get(p, end)) for p, end in ends.items()}
        unstable = {p: (b.end, b.written_end) for p, b in bounds.items() if b.written_end > b.end}
        self._seen_ends = {p: b.end for p, b in bounds.items()}
        return ends, unstable

    def reportLatestOffset(self) -> dict | None:
        """The log ends for Spark's progress report: those the planning of this trigger just saw,
        rather than asking the broker again (two questions per partition) a moment later."""
        if self._seen_ends is None:
            log = self._kafka()
            self._seen_ends = {p: b.end for p, b in log.partition_bounds(self._partition_ids(log)).items()}
        return {"topic": self._options.topic, "log_ends": {str(p): end for p, end in sorted(self._seen_ends.items())}}

    def partitions(self, start: dict, end: dict) -> list[ReadTask]:
        """The batch's read tasks: every partition's planned range, packed into at most
        ``read_tasks`` tasks (tidemark.read_tasks.assign_read_tasks)."""
        from tidemark.read_tasks import assign_read_tasks

        before, after = SourceState.from_offset(start), SourceState.from_offset(end)
        ranges = {
            planned.partition: PartitionRange(
                planned.partition,
                planned.start_offset,
                planned.end_offset,
                planned.state.log_end,
                planned.read_time_ms,
                planned.to_text(),
            )
            for planned in PlannedRange.of_batch(before, after)
        }
        tasks = assign_read_tasks({p: r.end - r.start for p, r in ranges.items()}, self._options.read_tasks)
        return [
            ReadTask(self._options.bootstrap_servers, self._options.topic, tuple(ranges[p] for p in task))
            for task in tasks
        ]

    def commit(self, end: dict) -> None:
        """Nothing to commit in Kafka: positions are checkpointed by Spark and kept in the ledger."""

    def stop(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    # -- reading (tasks) -----------------------------------------------------------------------
    def read(self, task: ReadTask) -> Iterator:
        """Every range row of the task, then the records of all its ranges (one reader for all),
        then, when decoding, what each partition's records held per aligned step."""
        import pyarrow as pa

        from connectors.kafka_log import read_ranges

        decoder = self._options.decode.decoder() if self._options.decode is not None else None
        decode = decoder.decode if decoder is not None else (lambda batch: batch)
        ranges = {r.partition: r for r in task.ranges}
        planned = {r.partition: PlannedRange.from_text(r.planned_range) for r in task.ranges if r.end > r.start}
        yield decode(range_batch(pa, task.ranges))
        to_read = {p: (ranges[p].start, ranges[p].end) for p in planned}
        for partition, records in read_ranges(task.bootstrap_servers, task.topic, to_read):
            yield decode(record_batch(pa, ranges[partition], planned[partition], records))
        # After the records: what they held per (partition, aligned step) (tidemark.step_counts).
        counts = decoder.step_counts() if decoder is not None else []
        if counts:
            yield decoder.decode(summary_batch(pa, counts, arrow_schema(pa)))

    def __getstate__(self):
        # The driver's Kafka client stays in the driver.
        state = dict(self.__dict__)
        state["_log"] = None
        return state
