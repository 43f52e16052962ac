"""The one interface of a partitioned log, as every tidemark job reads one.

A Kafka topic and a Kinesis stream are both logs of partitions (a Kinesis shard is a partition,
numbered by its id) read from positions (tidemark.log_position). What a job needs of either is
this protocol; the adapters (connectors.kafka_log.KafkaLog, connectors.kinesis_log.KinesisLog)
implement it, and connectors.partitioned_logs.open_log chooses one from the stream's
``LogConnection``, in that one place. The Spark source, the planner, the retention check and
the look before a run speak to the protocol only.

Two kinds of reading:

- **Planning** (the driver): which partitions there are and where a new one starts, each
  partition's bounds now (``look``), the time index the planner slices with (the methods of
  tidemark.aligned_slices.BatchedLogTimeIndex), and what retention took (``lost_to_retention``).
  A log may read ahead while it looks (Kinesis has no other way to learn where a shard ends) and
  hand what it holds to the tasks (``in_hand``).
- **Reading** (a Spark task): ``read_ranges`` yields the records of exact position ranges, in
  a process that has only the ``LogConnection``.
- **Look-ups** (one question per job, each log answering it its own way): the bounds the quality
  run judges (``bounds_now``), the look before a scheduled run (``look_before_run``), what the
  watermark page shows unread (``unread_now``), what a recovery can replay (``plan_recovery``)
  and a backfill window's positions (``backfill_indexes``). Kafka asks its ListOffsets and time
  index; Kinesis, which names no shard's end and keeps its time index in the service, probes
  shards and reads arrival times. The callers never ask which log they have.

Seams for what plugs in next: client settings (TLS, SASL, OAuth) arrive through the
``LogConnection`` the factory opens (never inside it: it names where they are); payload decoders
(a schema registry's Avro or Protobuf) work on the records' bytes after ``read_ranges``
(spark_jobs.log_source.decode_stage), so no adapter knows a payload format.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from tidemark.aligned_slices import BatchedLogTimeIndex
from tidemark.backfill_plan import PartitionTimeIndex
from tidemark.backfill_request import BackfillRequest
from tidemark.log_connection import LogConnection
from tidemark.nothing_new import LedgerPartition, LogPartitionNow
from tidemark.recovery_plan import RecoveryPlan
from tidemark.recovery_request import RecoveryRequest
from tidemark.retention_loss import LostRange
from tidemark.source_state import SourceState

# What a run that ends where the log was when it started reads to:
# (partition, its readable end now) → the end this run reads it to.
RunEnd = Callable[[int, int], int]


class LogUnreachableError(RuntimeError):
    """The log did not answer in time (its brokers down or restarting, a network away). Waiting
    may help: a continuous reader waits for it, trigger after trigger; a run that must end
    (available-now) fails. ``lasting``: waiting cannot help (credentials, a certificate refused):
    every reader fails at once."""

    lasting = False


@dataclass(frozen=True)
class PartitionView:
    """One partition as the planner sees it now.

    ``earliest``: its first retained position. ``end``: the readable end (Kafka: the last
    stable offset, below which every transaction is decided; Kinesis: the end of what the reader
    holds). ``written_end``: where the next record goes (Kafka's high watermark, above ``end``
    while a transaction is open; else ``end``). ``held``: nothing more is readable now, but the
    partition is not idle (a Kinesis child shard waiting for its parents, or a shard behind its
    tip with no record in hand): it holds G. ``finished``: closed and read to its end; it leaves
    G's minimum. ``caught_up``: the reader is at the partition's tip.
    """

    earliest: int
    end: int
    written_end: int
    held: bool = False
    finished: bool = False
    caught_up: bool = True


@dataclass(frozen=True)
class LogRecord:
    """One data record as every log gives it: its position, its log timestamp (ms, UTC: Kafka's
    record timestamp, Kinesis's ApproximateArrivalTimestamp), its key, its bytes and its headers
    (Kafka's, in the order the producer wrote them, a key may repeat; None: the log has none, as
    Kinesis)."""

    position: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] | None = None


@dataclass(frozen=True)
class UnreadNow:
    """What the watermark page shows of a log now. ``ends``: per partition, an end past the
    lake's position exactly when unread records exist. ``oldest_unread_ms``: per partition with
    unread records, the log time (ms, UTC) of the first of them (None: unknown). ``notes``: what
    could not be asked, for a person."""

    ends: dict[int, int]
    oldest_unread_ms: dict[int, int | None]
    notes: tuple[str, ...] = field(default=())


class PartitionedLog(BatchedLogTimeIndex, Protocol):
    """A partitioned log, opened from its ``connection`` for one process (driver or task)."""

    connection: LogConnection

    def partition_ids(self) -> list[int]:
        """The partitions the log lists now, ascending (a cheap metadata question)."""
        ...

    def first_positions(self, partitions: Iterable[int], starting: str = "earliest") -> dict[int, int]:
        """Where each of ``partitions`` starts when nothing was read of it yet: its earliest
        retained position, or its end (``starting="latest"``)."""
        ...

    def look(
        self, positions: Mapping[int, int], target_ms: int | None = None, max_records: int | None = None
    ) -> dict[int, PartitionView]:
        """Every partition of ``positions`` (partition → the next position to read) as it is
        now. A log that learns its ends by reading may read ahead from the positions, records up
        to ``target_ms`` (log time) and at most ``max_records`` per partition; a partition it
        cannot see is left out."""
        ...

    def lost_to_retention(self, state: SourceState) -> tuple[LostRange, ...]:
        """The ranges at ``state``'s positions that left the log before they were read."""
        ...

    def in_hand(self, partition: int, start: int, end: int) -> list[LogRecord] | None:
        """The records of [start, end) the driver already holds, for the task to take along;
        None when the task must read them itself."""
        ...

    def available_now_end(self) -> RunEnd:
        """For a run that must end: the end each partition is read to, fixed now (Kafka: the
        readable ends now; Kinesis: what arrived before now)."""
        ...

    def progress(self) -> dict:
        """What the log says of its reading for Spark's progress report (e.g. throttled calls)."""
        ...

    def read_ranges(self, ranges: Mapping[int, tuple[int, int]]) -> Iterator[tuple[int, list[LogRecord]]]:
        """The records of each partition's [start, end), as (partition, records) pieces in
        position order per partition. Raises tidemark.retention_loss.RetentionLossError when a
        range's start is no longer retained."""
        ...

    # -- look-ups ----------------------------------------------------------------------------------

    def bounds_now(
        self, positions: Mapping[int, int], finished: Collection[int], check_retention: bool
    ) -> dict[int, object]:
        """Every partition → its bounds now, as the quality run judges them
        (expectations.quality_verdicts.LogBoundsView: at least ``earliest`` and ``end``).
        ``positions``: the lake's live position per partition (where a log that must probe reads);
        ``finished``: partitions the ledger marks FINISHED; ``check_retention``: also say what
        expired unread at the positions (``lost``), when the log cannot tell it from its bounds.
        Raises ValueError when the log does not exist."""
        ...

    def look_before_run(self, ledger: Mapping[int, LedgerPartition]) -> dict[int, LogPartitionNow]:
        """Every partition now, against the live ledger's furthest rows (tidemark.nothing_new):
        enough to say whether a scheduled live run has anything to do."""
        ...

    def unread_now(self, positions: Mapping[int, int], finished: Collection[int]) -> UnreadNow:
        """What is unread past the lake's ``positions`` now, for the watermark page; it answers
        at once or raises (the page must not wait on a log that is away)."""
        ...

    def plan_recovery(self, request: RecoveryRequest) -> RecoveryPlan:
        """What of ``request``'s ranges the log can replay, oldest first, and what retention took.
        Raises tidemark.recovery_request.RecoveryRequestError for a partition the log lacks."""
        ...

    def backfill_indexes(self, request: BackfillRequest) -> dict[int, PartitionTimeIndex]:
        """Each requested partition's positions at the window's start and end, and what it still
        retains (tidemark.backfill_plan). Raises tidemark.backfill_request.BackfillRequestError
        for a partition the log lacks."""
        ...

    def close(self) -> None: ...
