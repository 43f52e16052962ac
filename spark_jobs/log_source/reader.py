"""tidemark's log source, on the PySpark 4.2 Python Data Source API: one source for every
partitioned log (tidemark.partitioned_log), a Kafka topic or a Kinesis stream alike.

Reads exact position ranges per partition. Every micro-batch yields, for every partition, one
``range`` row (the planned range [start, end), the log end seen, the read time) followed by that
range's ``record`` rows, each with the aligned step of the batch it was planned in and the G of
that step (a batch may pack several steps, see tidemark.batch_planner.plan_batch). The range
rows let the persist job write ledger rows for every partition even when a partition had
nothing to read, in the same idempotent commit as the data. When the source decodes (the persist
job), each partition's records are followed by one ``summary`` row per aligned step they were
planned in: what they held, counted while decoding (tidemark.step_counts).

Planning is tidemark.batch_planner.BatchPlanner: with alignment, every batch admits from each
partition only records with log timestamp < T = G + max_drift. The end position of a batch is a
tidemark.source_state.SourceState, checkpointed by Spark::

    {"topic": "telemetry", "plan_seq": 7, "read_time_ms": 1763800000000, "slicing": "event_time",
     "global_watermark_ms": ..., "target_ms": ...,
     "partitions": {"0": {"position": 120, "log_end": 500, "watermark_ms": ..., "status": "ACTIVE",
                          "last_produced_ms": ..., "next_record_at_least_ms": ...,
                          "open_transaction": null}, ...}}

so each partition's position, W_p and status, and G survive restarts ("topic" is the log's
name, a Kinesis stream's too: the key is kept so that existing checkpoints still resume).
``read_time_ms`` is the "now" of the future guard, fixed in the state so a replayed batch
decides exactly as the first run.

What differs by log is the log's (connectors.partitioned_logs.open_log): Kafka's readable end is
the last stable offset (reading is read_committed, so ranges never reach into an open
transaction) and offsets are not records; Kinesis has no log end but what was read, so the
driver reads every shard ahead (``look``), the planner plans from that, and each planned range's
records travel to its task inside the task's input partition (``in_hand``); a shard appears with
a reshard and waits for its parents (``held``), a closed one read to its end is ``finished``.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from spark_jobs.log_source.options import SOURCE_NAME, LogSourceOptions
from spark_jobs.log_source.planned_reading import PartitionRange, PlannedReading, summary_batch
from spark_jobs.log_source.rows import arrow_schema, range_batch, record_batch
from tidemark.event_time_text import format_event_time
from tidemark.partition_limit import check_partition_limit
from tidemark.partition_status import PartitionStatus
from tidemark.partitioned_log import LogUnreachableError, PartitionView
from tidemark.planned_range import PlannedRange, raw_record_schema
from tidemark.retention_loss import RetentionLossError, retention_loss_message
from tidemark.source_state import PartitionState, SourceState

_logger = logging.getLogger("tidemark.source")

# How far ahead of the last G a log that reads ahead reads (in max_drift steps), and how many
# records per partition at most: enough for several packed steps, bounded whatever the backlog.
_READ_AHEAD_DRIFTS = 4
_MIN_READ_AHEAD_PER_PARTITION = 1_000


@dataclass(frozen=True)
class ReadTask(InputPartition):
    """One Spark task: the ranges of several partitions (tidemark.read_tasks) and, per range,
    the records the driver already holds for it (None: the task reads the range itself)."""

    ranges: tuple[PartitionRange, ...]
    records: tuple[tuple | None, ...]


class LogSource(DataSource):
    """Factory registered as ``tidemark_log``: ``spark.readStream.format("tidemark_log")``."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        spec = self._spec()
        return raw_record_schema(spec.connection.position_type) if spec.decode is None else spec.decode.schema()

    def streamReader(self, schema) -> LogReader:
        return LogReader(self._spec())

    def _spec(self) -> LogSourceOptions:
        """The ``spec`` option, decoded on first use (it fails the query's start, naming the
        field, when it is not valid) and kept: schema() and streamReader() share one value."""
        if getattr(self, "_decoded_spec", None) is None:
            self._decoded_spec = LogSourceOptions.from_options(self.options)
        return self._decoded_spec


class LogReader(PlannedReading, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans and reads position ranges. Lives in the driver for the query's life (planning), and
    is pickled to the tasks for ``read`` (which touches no driver state). ``open_log`` stands in
    for connectors.partitioned_logs.open_log in tests."""

    def __init__(self, options: LogSourceOptions, clock=time.time, open_log=None):
        self._options = options
        self._connection = options.connection
        self._positions = options.connection.position_type
        self._planner = self._new_planner(options, clock, **options.connection.planner_settings())
        self._clock = clock
        self._open_log = open_log
        self._log = None
        # The readable ends the last look saw, for reportLatestOffset (called right after it).
        self._seen_ends: dict[int, int] | None = None
        # Set by prepareForTriggerAvailableNow: where each partition's reading ends in this run.
        self._run_end = None
        # When the log stopped answering a continuous run (ms), None while it answers.
        self._unreachable_since: int | None = None
        # Batches this query planned, but those that register partitions or pass over an accepted
        # loss (options.max_batches bounds them).
        self._planned_batches = 0

    # -- planning (driver) ---------------------------------------------------------------------
    def _driver_log(self):
        if self._log is None:
            if self._open_log is None:
                from connectors.partitioned_logs import open_log

                self._open_log = open_log
            self._log = self._open_log(self._connection)
        return self._log

    def _partition_ids(self, log) -> list[int]:
        """The partitions this query reads: the bounded ones, or all the log lists (never more
        than max_partitions)."""
        listed = log.partition_ids()
        check_partition_limit(self._connection.log_name, len(listed), self._options.max_partitions)
        if self._options.offset_bounds is None:
            return listed
        missing = sorted(set(self._options.offset_bounds) - set(listed))
        if missing:
            raise ValueError(
                f"{self._connection.log_words} has no {self._connection.partition_words(missing[0])} "
                "(it never existed, or it expired)"
            )
        return sorted(self._options.offset_bounds)

    def initialOffset(self) -> dict:
        """Where a query without a checkpoint starts: the bounds' starts in a bounded run; the
        state resumed from the lake (``resume_from``) when the tables already hold the stream;
        else every partition's earliest position (or end)."""
        log = self._driver_log()
        partitions = self._partition_ids(log)
        if self._options.resume_from is not None:
            resumed = SourceState.from_offset(self._options.resume_from)
            self._refuse_retention_loss(resumed)  # an accepted range is passed over by the first batch
            return self._offset(dataclasses.replace(resumed, read_time_ms=self._now_ms()))
        if self._options.offset_bounds is not None:
            positions = {p: start for p, (start, _) in self._options.offset_bounds.items()}
        else:
            positions = log.first_positions(partitions, self._options.starting)
        views = log.look(positions, None, self._read_ahead(len(positions)))
        self._refuse_bounds_past_retention(positions, views)
        log_ends, _, _, _ = self._log_ends(positions, views)
        initial = self._planner.initial(positions, log_ends, log)
        if self._options.pinned_global_watermark_ms is not None:
            initial = dataclasses.replace(initial, global_watermark_ms=self._options.pinned_global_watermark_ms)
        return self._offset(initial)

    def _refuse_bounds_past_retention(self, positions: dict[int, int], views: dict[int, PartitionView]) -> None:
        """A bounded run whose start has left the log cannot read what it was asked to."""
        if self._options.offset_bounds is None:
            return
        for partition, start in sorted(positions.items()):
            view = views.get(partition)
            if view is not None and start < view.earliest:
                raise ValueError(
                    f"{self._positions.name}s [{start}, {view.earliest}) of {self._connection.partition_words(partition)} "
                    f"of {self._connection.log_words} have left the log (retention): they cannot be read any more"
                )

    def prepareForTriggerAvailableNow(self) -> None:
        self._run_end = self._driver_log().available_now_end()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """Plan the next batch, or none while the log does not answer.

        A continuous run waits for a log that does not answer (tidemark.partitioned_log.
        LogUnreachableError: brokers restarting, a network away): the trigger plans no batch
        (``start`` again), says so once, and asks again at the next trigger, however long the
        outage lasts. A run that must end (available-now: persist runs, backfill, recovery) fails,
        and a refusal (credentials, a certificate) fails every run at once."""
        try:
            latest = self._latest_offset(start, limit)
        except LogUnreachableError as error:
            if error.lasting or self._run_end is not None:
                raise
            if self._unreachable_since is None:
                self._unreachable_since = self._now_ms()
                _logger.warning({"event": "log_unreachable", "log": self._connection.log_name, "error": str(error)})
            return start
        if self._unreachable_since is not None:
            waited_s = (self._now_ms() - self._unreachable_since) / 1000  # since the first trigger that gave up
            _logger.warning(
                {"event": "log_reachable_again", "log": self._connection.log_name, "waited_s": round(waited_s, 1)}
            )
            self._unreachable_since = None
        return latest

    def _latest_offset(self, start: dict, limit: ReadLimit) -> dict:
        """Plan the next batch. ReadMaxRows caps its records; ReadAllAvailable lifts the cap, but
        alignment still slices at T: it is an event-time rule, not a read limit."""
        if start.get("topic") != self._connection.log_name:
            raise ValueError(
                f"the checkpoint belongs to the log {start.get('topic')!r}, not {self._connection.log_words}: "
                "use a new checkpoint location for a new log"
            )
        previous = SourceState.from_offset(start)
        log = self._driver_log()
        discovered = sorted(set(self._partition_ids(log)) - set(previous.partitions))
        if discovered:
            return self._offset(self._registered(previous, log.first_positions(discovered)))
        skips = self._refuse_retention_loss(previous)
        if skips:
            return self._offset(self._passed_over(previous, skips))
        if self._turn_is_over():
            return start
        positions = previous.positions()
        target = None
        if previous.global_watermark_ms is not None and self._options.alignment:
            target = previous.global_watermark_ms + _READ_AHEAD_DRIFTS * self._options.max_drift_ms
        max_records = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        views = log.look(positions, target, self._read_ahead(len(positions), max_records))
        log_ends, unstable, held, finished = self._log_ends(positions, views)
        feedback = self._feedback(previous.plan_seq)
        planned = self._planner.plan_batch(previous, log_ends, feedback, log, max_records, unstable, held, finished)
        planned = self._switched(previous, planned, log_ends)
        if planned is previous:
            return start
        self._planned_batches += 1
        self._log_open_transactions(previous, planned)
        return self._offset(planned)

    def _turn_is_over(self) -> bool:
        """True once this query planned ``max_batches`` batches: the run ends as if the log held
        nothing more, and its next run goes on from there (the job says so: run_pipeline)."""
        limit = self._options.max_batches
        return limit is not None and self._planned_batches >= limit

    def _registered(self, previous: SourceState, first: dict[int, int]) -> SourceState:
        """``previous`` with partitions new to the log (added to a topic, made by a reshard)
        registered at their first positions, in a batch of their own, so that each one's first
        range has a known start like every other range."""
        _logger.info({"event": "partitions_discovered", "log": self._connection.log_name, "partitions": sorted(first)})
        partitions = dict(previous.partitions)
        for partition, position in first.items():
            partitions[partition] = PartitionState(position, position, None, PartitionStatus.ACTIVE, self._now_ms())
        return SourceState(
            previous.plan_seq + 1,
            self._now_ms(),
            previous.slicing,
            previous.global_watermark_ms,
            previous.target_ms,
            partitions,
        )

    def _read_ahead(self, partitions: int, max_records: int | None = None) -> int:
        """Records per partition a log that reads ahead may hold: twice the batch's share, at least a page's worth."""
        budget = max_records if max_records is not None else self._options.max_records_per_batch
        if budget is None:
            return 10 * _MIN_READ_AHEAD_PER_PARTITION
        return max(_MIN_READ_AHEAD_PER_PARTITION, 2 * budget // max(1, partitions))

    def _log_ends(self, positions: dict[int, int], views: dict[int, PartitionView]):
        """From the log's ``views``: the readable end of every partition of ``positions``, capped at
        the run's bounds and at the available_now end; the partitions where an open transaction
        holds the readable end below the written end, as {partition: (readable end, written end)},
        never capped; the partitions ``held`` (not readable now, not idle) and ``finished``
        (closed and read to their end). A bounded run reads its ranges: holding and finishing
        are not its concern."""
        bounded = self._options.offset_bounds is not None
        ends, unstable, held, finished = {}, {}, set(), set()
        for partition, position in positions.items():
            view = views.get(partition)
            if view is None:
                ends[partition] = position
                continue
            end = view.end
            if bounded:
                end = min(end, self._options.offset_bounds[partition][1])
            if self._run_end is not None:
                end = self._run_end(partition, end)
            ends[partition] = max(end, position)
            if view.written_end > view.end:
                unstable[partition] = (view.end, view.written_end)
            if bounded:
                continue
            if view.finished:
                finished.add(partition)
            elif view.held or (end <= position and not view.caught_up):
                held.add(partition)
        self._seen_ends = {p: v.end for p, v in views.items()}
        return ends, unstable, held, finished

    def _refuse_retention_loss(self, state: SourceState) -> dict[int, int]:
        """Stop, naming the exact positions, when a partition's next positions have left the log:
        planning from the earliest retained position instead would jump over them silently
        (tidemark.retention_loss). Logged as well as raised: the log line is what a person finds
        first, the error is what fails the run; the ranges are left for the driver as well
        (spark_jobs.log_source.retention_stop).

        Ranges a person accepted as lost (``accepted_losses``, tidemark.accepted_loss) are not
        refused: returns {partition: the accepted range's end} for those, to pass over; any part
        of a loss nobody accepted stops the run all the same."""
        from tidemark.accepted_loss import settle_losses

        lost = self._driver_log().lost_to_retention(state)
        skips, lost = settle_losses(lost, self._options.accepted_losses)
        if not lost:
            return skips
        message = retention_loss_message(self._connection, lost)
        _logger.error(
            {
                "event": "positions_lost_to_retention",
                "log": self._connection.log_name,
                "lost": [range_.to_json() for range_ in lost],
                "detail": message,
            }
        )
        if self._options.feedback_dir:
            from spark_jobs.log_source.retention_stop import write_lost_ranges

            write_lost_ranges(self._options.feedback_dir, lost)
        raise RetentionLossError(message, lost)

    def _passed_over(self, previous: SourceState, skips: dict[int, int]) -> SourceState:
        """A batch of its own that moves each partition of ``skips`` past its accepted range and
        nothing else: its ranges are written to the ledger like any (a live row that read
        nothing, so the live ranges stay contiguous), and never read (``partitions``)."""
        partitions = {}
        for partition, state in previous.partitions.items():
            end = skips.get(partition)
            if end is None:
                partitions[partition] = dataclasses.replace(state, accepted_loss=False)
            else:
                partitions[partition] = dataclasses.replace(
                    state, position=end, log_end=max(state.log_end, end), accepted_loss=True
                )
        _logger.warning(
            {
                "event": "accepted_loss_passed",
                "log": self._connection.log_name,
                "passed": [
                    {"partition": p, "start": str(previous.partitions[p].position), "end": str(end)}
                    for p, end in sorted(skips.items())
                ],
                "detail": "these ranges were lost to retention and accepted as lost (tidemark accept-lost): the "
                "job reads on after them; nothing in them was read",
            }
        )
        return dataclasses.replace(
            previous, plan_seq=previous.plan_seq + 1, read_time_ms=self._now_ms(), partitions=partitions, steps=()
        )

    def _log_open_transactions(self, previous: SourceState, planned: SourceState) -> None:
        """Say when a partition starts or stops being held by an open transaction: silence is the
        one symptom a dead transactional producer has."""
        for partition, state in sorted(planned.partitions.items()):
            before = previous.partitions.get(partition)
            was_held = before is not None and before.open_transaction is not None and before.open_transaction.held
            hold = state.open_transaction
            if hold is not None and hold.held and not was_held:
                _logger.warning(
                    {
                        "event": "partition_held_by_open_transaction",
                        "topic": self._connection.log_name,
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
                _logger.info(
                    {
                        "event": "partition_released_by_open_transaction",
                        "topic": self._connection.log_name,
                        "partition": partition,
                    }
                )

    def reportLatestOffset(self) -> dict | None:
        """The log ends for Spark's progress report: those the planning of this trigger just saw,
        rather than asking the log again a moment later, and what the log says of its reading."""
        if self._seen_ends is None or self._log is None:
            return None  # nothing planned yet: nothing seen to report
        log = self._log
        ends = {str(p): self._positions.to_json(end) for p, end in sorted(self._seen_ends.items())}
        return {"topic": self._connection.log_name, "log_ends": ends, **log.progress()}

    def partitions(self, start: dict, end: dict) -> list[ReadTask]:
        """The batch's read tasks: every partition's planned range with the records the driver
        holds for it, packed into at most ``read_tasks`` tasks (tidemark.read_tasks.assign_read_tasks)
        by records when the driver holds them, else by positions (Kafka's offsets) or as one."""
        from tidemark.read_tasks import assign_read_tasks

        before, after = SourceState.from_offset(start), SourceState.from_offset(end)
        log = self._driver_log()
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
            if planned.state.accepted_loss:
                held = []  # passed over: lost to retention and accepted as lost, nothing to read
            else:
                held = log.in_hand(p, planned.start_offset, planned.end_offset) if planned.reads else []
            records[p] = None if held is None else tuple(held)
        weights = {p: self._weight(ranges[p], records[p]) for p in ranges}
        tasks = assign_read_tasks(weights, self._options.read_tasks)
        return [ReadTask(tuple(ranges[p] for p in task), tuple(records[p] for p in task)) for task in tasks]

    def _weight(self, range_: PartitionRange, held: tuple | None) -> int:
        if held is not None:
            return len(held)
        return range_.end - range_.start if self._positions.dense else 1

    def commit(self, end: dict) -> None:
        """Nothing to commit to the log: positions are checkpointed by Spark and kept in the
        ledger; a log that reads ahead drops what the batch consumed at its next look."""

    def stop(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def _offset(self, state: SourceState) -> dict:
        return state.to_offset(self._connection.log_name)

    # -- reading (tasks) -----------------------------------------------------------------------
    def read(self, task: ReadTask) -> Iterator:
        """Every range row of the task, then the records of all its ranges (those the driver
        held, then those read here, by one reader), then, when decoding, what each partition's
        records held per aligned step."""
        import pyarrow as pa

        decoder = self._options.decode.decoder() if self._options.decode is not None else None
        decode = decoder.decode if decoder is not None else (lambda batch: batch)
        ranges = {r.partition: r for r in task.ranges}
        planned = {r.partition: PlannedRange.from_text(r.planned_range) for r in task.ranges if r.end > r.start}
        yield decode(range_batch(pa, self._positions, task.ranges))
        to_read = {}
        for range_, held in zip(task.ranges, task.records):
            if range_.partition not in planned:
                continue
            if held is None:
                to_read[range_.partition] = (range_.start, range_.end)
            elif held:
                yield decode(record_batch(pa, self._positions, range_, planned[range_.partition], held))
        if to_read:
            yield from self._read_in_task(to_read, ranges, planned, decode)
        # After the records: what they held per (partition, aligned step) (tidemark.step_counts).
        counts = decoder.step_counts() if decoder is not None else []
        if counts:
            yield decoder.decode(summary_batch(pa, counts, arrow_schema(pa, self._positions)))

    def _read_in_task(self, to_read: dict, ranges: dict, planned: dict, decode) -> Iterator:
        import pyarrow as pa

        from connectors.partitioned_logs import open_log

        log = open_log(self._connection, role="task")
        try:
            for partition, records in log.read_ranges(to_read):
                yield decode(record_batch(pa, self._positions, ranges[partition], planned[partition], records))
        finally:
            log.close()

    def __getstate__(self):
        # The driver's log client, its buffers and the run's end stay in the driver.
        state = dict(self.__dict__)
        state["_log"] = None
        state["_open_log"] = None
        state["_run_end"] = None
        return state
