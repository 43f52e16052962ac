"""tidemark's Kinesis streaming source, on the PySpark 4.2 Python Data Source API.

The same contract as the Kafka source (spark_jobs.kafka_source.reader): every micro-batch
yields, per shard, one ``range`` row (the planned range [start, end) of sequence numbers, the
readable end, the read time) and that range's ``record`` rows, each with its aligned step and
that step's G; when decoding, a ``summary`` row per (shard, step). The planner is the same
tidemark.batch_planner.BatchPlanner, so the event-time rules, alignment, idleness, sealing, late
routing, quarantine and the ledger are the same code as for Kafka.

What differs is the log (connectors.kinesis_log.KinesisLog):

- Positions are sequence numbers (sparse, up to 56 digits): the planner counts records with the
  log (tidemark.log_position), and the rows carry positions as ordered text keys.
- Kinesis has no time index to ask and no log end but what was read: before each planning the
  driver reads every shard ahead into a bounded buffer (``fill``), the planner plans from it,
  and each planned range's records travel to its Spark task inside the task's input partition.
  A task reads its range from Kinesis (``read_range``) only when the driver does not hold it: a
  batch replayed after a restart.
- Resharding: shards appear (ListShards, re-listed every few seconds) and are registered in a
  batch of their own; a child waiting for its parents is ``held`` (ACTIVE, holding G at its
  first record's time), a closed shard read to its end is ``finished`` (FINISHED, out of G).
- Idleness: a shard is caught up only when GetRecords returned nothing with MillisBehindLatest
  0; a shard behind with nothing in hand is held, never idle.

Credentials come from the process environment (tidemark.kinesis_access); the options never
carry them.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from spark_jobs.kinesis_source.options import SOURCE_NAME, KinesisSourceOptions
from spark_jobs.kinesis_source.rows import arrow_schema, range_batch, record_batch
from spark_jobs.log_source.planned_reading import PartitionRange, PlannedReading, summary_batch
from tidemark.log_position import KINESIS_SEQUENCE_NUMBERS
from tidemark.partition_limit import check_partition_limit
from tidemark.partition_status import PartitionStatus
from tidemark.planned_range import PlannedRange, raw_record_schema
from tidemark.source_state import PartitionState, SourceState

_logger = logging.getLogger("tidemark.source")

# How far ahead of the last G the driver reads (in max_drift steps), and how many records per
# shard at most: enough for several packed steps, bounded whatever the backlog.
_FILL_DRIFTS_AHEAD = 4
_MIN_FILL_PER_SHARD = 1_000


@dataclass(frozen=True)
class ReadTask(InputPartition):
    """One Spark task: the ranges of several shards and, per range, the records the driver read
    for it (None: the task reads the range from Kinesis itself)."""

    stream: str
    region: str
    endpoint: str | None
    ranges: tuple[PartitionRange, ...]
    records: tuple[tuple | None, ...]
    max_calls_per_second: float


class KinesisLogSource(DataSource):
    """Factory registered as ``tidemark_kinesis``: ``spark.readStream.format("tidemark_kinesis")``."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        decode = self._spec().decode
        return raw_record_schema(KINESIS_SEQUENCE_NUMBERS) if decode is None else decode.schema()

    def streamReader(self, schema) -> KinesisLogReader:
        return KinesisLogReader(self._spec())

    def _spec(self) -> KinesisSourceOptions:
        if getattr(self, "_decoded_spec", None) is None:
            self._decoded_spec = KinesisSourceOptions.from_options(self.options)
        return self._decoded_spec


class InjectedThrottling:
    """A Kinesis client that refuses a fraction of GetRecords calls with Kinesis's throttling
    error before asking the real one: the chaos switch of the throttling tests (a loopback
    Kinesis never throttles). Everything else goes to ``client`` unchanged."""

    def __init__(self, client, fraction: float, seed: int = 27):
        self._client = client
        self._fraction = fraction
        self._random = random.Random(seed)
        self.refused = 0

    def get_records(self, **params):
        if self._random.random() < self._fraction:
            from botocore.exceptions import ClientError

            self.refused += 1
            raise ClientError(
                {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "Rate exceeded (injected)"}},
                "GetRecords",
            )
        return self._client.get_records(**params)

    def __getattr__(self, name):
        return getattr(self._client, name)


def kinesis_client_for(options: KinesisSourceOptions, max_workers: int = 16):
    """The boto3 client this process reads with (credentials from the environment), wrapped in
    the injected throttling when the options ask for it."""
    from connectors.kinesis_log import kinesis_client

    client = kinesis_client(options.region, options.endpoint, max_workers)
    return InjectedThrottling(client, options.injected_throttling) if options.injected_throttling else client


class KinesisLogReader(PlannedReading, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans and reads sequence ranges. Lives in the driver for the query's life (planning), and
    is pickled to the tasks for ``read`` (which touches no driver state)."""

    def __init__(self, options: KinesisSourceOptions, clock=time.time):
        self._options = options
        self._planner = self._new_planner(options, clock)
        self._clock = clock
        self._log = None
        # Set by prepareForTriggerAvailableNow: records that arrived after the run started are
        # left for the next run, so an available_now run ends.
        self._available_now_cutoff_ms: int | None = None

    # -- planning (driver) ---------------------------------------------------------------------
    def _kinesis(self):
        if self._log is None:
            from connectors.kinesis_log import KinesisLog

            self._log = KinesisLog(
                self._options.stream,
                self._options.region,
                self._options.endpoint,
                client=kinesis_client_for(self._options),
                clock=self._clock,
                max_calls_per_second=self._options.max_calls_per_second,
            )
        return self._log

    def _shards(self, log) -> dict:
        shards = log.shards()
        check_partition_limit(self._options.stream, len(shards), self._options.max_partitions)
        if self._options.offset_bounds is not None:
            missing = sorted(set(self._options.offset_bounds) - set(shards))
            if missing:
                raise ValueError(
                    f"Kinesis stream {self._options.stream!r} lists no shard for partition {missing[0]} "
                    "(shardId-%012d): it expired or never existed" % missing[0]
                )
            return {p: shards[p] for p in self._options.offset_bounds}
        return shards

    def initialOffset(self) -> dict:
        """Where a query without a checkpoint starts: the bounds' starts in a bounded run; the
        state resumed from the lake (``resume_from``); else every listed shard's first sequence
        number (TRIM_HORIZON)."""
        log = self._kinesis()
        shards = self._shards(log)
        if self._options.resume_from is not None:
            resumed = SourceState.from_offset(self._options.resume_from)
            self._refuse_retention_loss(resumed)
            return dataclasses.replace(resumed, read_time_ms=self._now_ms()).to_offset(self._options.stream)
        if self._options.offset_bounds is not None:
            positions = {p: start for p, (start, _) in self._options.offset_bounds.items()}
        else:
            positions = {p: shard.starting_sequence for p, shard in shards.items()}
        log.fill(positions, None, self._fill_cap(len(positions)))
        log_ends, _, _ = self._log_ends(log, positions)
        initial = self._planner.initial(positions, log_ends, log)
        if self._options.pinned_global_watermark_ms is not None:
            initial = dataclasses.replace(initial, global_watermark_ms=self._options.pinned_global_watermark_ms)
        return initial.to_offset(self._options.stream)

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now_cutoff_ms = self._now_ms()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """Plan the next batch from what the driver has read ahead of every shard."""
        if start.get("topic") != self._options.stream:
            raise ValueError(
                f"the checkpoint belongs to stream {start.get('topic')!r}, not {self._options.stream!r}: "
                "use a new checkpoint location for a new stream"
            )
        previous = SourceState.from_offset(start)
        log = self._kinesis()
        shards = self._shards(log)
        discovered = sorted(set(shards) - set(previous.partitions))
        if discovered:
            # A shard created by a split or a merge: registered at its first sequence number in a
            # batch of its own, so its first range has a known start like every other range.
            partitions = dict(previous.partitions)
            for partition in discovered:
                first = shards[partition].starting_sequence
                partitions[partition] = PartitionState(first, first, None, PartitionStatus.ACTIVE, self._now_ms())
            _logger.info({"event": "shards_discovered", "stream": self._options.stream, "partitions": discovered})
            return SourceState(
                previous.plan_seq + 1,
                self._now_ms(),
                previous.slicing,
                previous.global_watermark_ms,
                previous.target_ms,
                partitions,
            ).to_offset(self._options.stream)

        self._refuse_retention_loss(previous)
        positions = previous.positions()
        target = None
        if previous.global_watermark_ms is not None and self._options.alignment:
            target = previous.global_watermark_ms + _FILL_DRIFTS_AHEAD * self._options.max_drift_ms
        max_records = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        log.fill(positions, target, self._fill_cap(len(positions), max_records))
        log_ends, held, finished = self._log_ends(log, positions)
        feedback = self._feedback(previous.plan_seq)
        planned = self._planner.plan_batch(previous, log_ends, feedback, log, max_records, None, held, finished)
        planned = self._switched(previous, planned, log_ends)
        if planned is previous:
            return start
        return planned.to_offset(self._options.stream)

    def _fill_cap(self, shards: int, max_records: int | None = None) -> int:
        """Records per shard the driver may hold: twice the batch's share, at least a page's worth."""
        budget = max_records if max_records is not None else self._options.max_records_per_batch
        if budget is None:
            return 10 * _MIN_FILL_PER_SHARD
        return max(_MIN_FILL_PER_SHARD, 2 * budget // max(1, shards))

    def _log_ends(self, log, positions: dict[int, int]) -> tuple[dict[int, int], set[int], set[int]]:
        """The readable end of every shard (what the driver holds), capped at the run's bounds
        and at the available_now cutoff; the shards ``held`` (a child waiting for its parents, a
        shard behind with no record in hand) and ``finished`` (closed and read to its end)."""
        bounds = log.bounds()
        ends, held, finished = {}, set(), set()
        for partition, position in positions.items():
            shard = bounds.get(partition)
            if shard is None:
                ends[partition] = position
                continue
            end = shard.end
            if self._options.offset_bounds is not None:
                end = min(end, self._options.offset_bounds[partition][1])
            if self._available_now_cutoff_ms is not None:
                cut = log.offset_for_time(partition, self._available_now_cutoff_ms)
                end = min(end, cut) if cut is not None else end
            ends[partition] = max(end, position)
            if self._options.offset_bounds is not None:
                continue  # a bounded run reads its ranges: parents and idleness are not its concern
            if shard.finished:
                finished.add(partition)
            elif shard.waiting_for or (end <= position and not shard.caught_up):
                held.add(partition)
        return ends, held, finished

    def _refuse_retention_loss(self, state: SourceState) -> None:
        """Stop, naming the shards and sequence ranges, when records at the lake's positions
        expired before they were read (never skip them silently)."""
        from connectors.kafka_log import RetentionLossError
        from connectors.kinesis_log import retention_loss_message

        log = self._kinesis()
        lost = log.lost_to_retention(
            state.positions(),
            last_read_ms={p: s.last_produced_ms for p, s in state.partitions.items() if s.last_produced_ms},
            finished=[p for p, s in state.partitions.items() if s.status == PartitionStatus.FINISHED],
        )
        if not lost:
            return
        message = retention_loss_message(self._options.stream, lost)
        log_line = {
            "event": "sequences_lost_to_retention",
            "stream": self._options.stream,
            "lost": [range_.to_json() for range_ in lost],
            "detail": message,
        }
        _logger.error(log_line)
        raise RetentionLossError(message, tuple(lost))

    def reportLatestOffset(self) -> dict | None:
        """What the driver holds of every shard, for Spark's progress report."""
        if self._log is None:
            return None
        bounds = self._log.bounds()
        return {
            "topic": self._options.stream,
            "log_ends": {str(p): str(b.end) for p, b in sorted(bounds.items())},
            "millis_behind_latest": {str(p): b.millis_behind_latest for p, b in sorted(bounds.items())},
            "throttled_calls": self._log.throttled_calls,
        }

    def partitions(self, start: dict, end: dict) -> list[ReadTask]:
        """The batch's read tasks: every shard's planned range with the records the driver read
        for it, packed into at most ``read_tasks`` tasks by record count."""
        from tidemark.read_tasks import assign_read_tasks

        before, after = SourceState.from_offset(start), SourceState.from_offset(end)
        log = self._kinesis()
        ranges, records = {}, {}
        for planned in PlannedRange.of_batch(before, after):
            p = planned.partition
            ranges[p] = PartitionRange(
                p,
                planned.start_offset,
                planned.end_offset,
                planned.state.log_end,
                planned.read_time_ms,
                planned.to_text(),
            )
            held = log.take(p, planned.start_offset, planned.end_offset) if planned.reads else []
            records[p] = None if held is None else tuple(held)
        weights = {p: (len(records[p]) if records[p] is not None else 1) for p in ranges}
        tasks = assign_read_tasks(weights, self._options.read_tasks)
        return [
            ReadTask(
                self._options.stream,
                self._options.region,
                self._options.endpoint,
                tuple(ranges[p] for p in task),
                tuple(records[p] for p in task),
                self._options.max_calls_per_second,
            )
            for task in tasks
        ]

    def commit(self, end: dict) -> None:
        """Nothing to commit in Kinesis: positions are checkpointed by Spark and kept in the
        ledger; the next ``fill`` drops what the batch consumed from the driver's buffer."""

    def stop(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    # -- reading (tasks) -----------------------------------------------------------------------
    def read(self, task: ReadTask) -> Iterator:
        """Every range row of the task, then the records of all its ranges, then, when decoding,
        what each shard's records held per aligned step."""
        import pyarrow as pa

        from connectors.kinesis_log import read_range

        decoder = self._options.decode.decoder() if self._options.decode is not None else None
        decode = decoder.decode if decoder is not None else (lambda batch: batch)
        yield decode(range_batch(pa, task.ranges))
        client = None
        for partition, held in zip(task.ranges, task.records):
            if partition.end <= partition.start:
                continue
            planned = PlannedRange.from_text(partition.planned_range)
            if held is None:
                if client is None:
                    client = kinesis_client_for(self._options, max_workers=1)
                from tidemark.shard_lineage import shard_id_of

                held = list(
                    read_range(
                        task.stream,
                        task.region,
                        task.endpoint,
                        shard_id_of(partition.partition),
                        partition.start,
                        partition.end,
                        client=client,
                        max_calls_per_second=task.max_calls_per_second,
                    )
                )
            if held:
                yield decode(record_batch(pa, partition, planned, held))
        counts = decoder.step_counts() if decoder is not None else []
        if counts:
            yield decoder.decode(summary_batch(pa, counts, arrow_schema(pa)))

    def __getstate__(self):
        # The driver's Kinesis client and buffers stay in the driver.
        state = dict(self.__dict__)
        state["_log"] = None
        return state
