"""The Kinesis log as tidemark's driver sees it: shards, a read-ahead buffer, and exact ranges.

A shard is a partition (tidemark.shard_lineage); a position is a sequence number held as an
``int``, "next to read" (after a record with sequence s the position is s + 1). Sequence numbers
are sparse: nothing here subtracts positions to count records; counts come from records read.

Kinesis has no time index a driver can ask cheaply and no "log end" but what has been read, so
the driver reads ahead: ``fill`` reads each shard from its position into a buffer, and the
planner's time index (tidemark.aligned_slices.BatchedLogTimeIndex) is answered from that buffer.
The Spark source then hands each planned range's buffered records to its tasks (``take``), and
re-reads a range from Kinesis (``read_range``) only when the buffer does not hold it (a replay
after a restart, recovery, backfill).

An iterator is reused while it continues exactly at the position and is younger than 4.5
minutes (Kinesis expires it after 5). The calls themselves (rate, throttling, errors, the client
and its credentials) are connectors.kinesis_api's; reads outside the buffer are
connectors.kinesis_shard_reads'.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from connectors import kinesis_lookups
from connectors.kinesis_api import (
    EXPIRED,
    FILL_THROTTLE_RETRIES,
    HORIZON_PAGES,
    KinesisApi,
    KinesisRecord,
    KinesisShardGoneError,
    KinesisStreamNotFoundError,
    kinesis_client,
    kinesis_client_for,
    record_of,
    where_of,
)
from connectors.kinesis_shard_reads import read_range
from tidemark.aligned_slices import LoggedRecord
from tidemark.retention_loss import LostRange
from tidemark.shard_lineage import ShardInfo, is_finished, shard_from_listing, shard_id_of, waiting_for

# Kinesis expires an iterator 5 minutes after it is returned; half a minute of margin covers a
# slow call and clock skew between driver and service.
ITERATOR_LIFETIME_S = 270.0
SHARD_REFRESH_S = 10.0


@dataclass(frozen=True)
class ShardBounds:
    """A shard as the planner sees it after ``fill``.

    ``earliest``: the shard's starting sequence. ``end``: the exclusive end of what is buffered
    and readable (the last buffered sequence + 1, or the position when nothing is): the planner's
    log end, since Kinesis has no other. ``caught_up``: the last GetRecords returned nothing with
    MillisBehindLatest 0 (the reader is at the shard's tip; the shard may still be written).
    ``finished``: the shard is closed, read to its end and every record of it consumed (it leaves
    the global-watermark minimum). ``waiting_for``: parents not finished yet (nothing of this
    shard is readable until they are). ``listed``: False for a shard ListShards no longer names
    (it expired whole; ``lost_to_retention`` says whether anything of the lake's was in it).
    """

    earliest: int
    end: int
    caught_up: bool
    finished: bool
    waiting_for: tuple[int, ...]
    millis_behind_latest: int | None
    listed: bool = True


@dataclass
class _Shard:
    """What the driver holds of one shard: every record with covered_from <= sequence < read_end
    (the buffer), the iterator that continues at read_end, and what the last page said."""

    position: int
    covered_from: int
    read_end: int
    records: list[KinesisRecord] = field(default_factory=list)
    sequences: list[int] = field(default_factory=list)
    iterator: str | None = None
    iterator_at: int | None = None
    iterator_issued_s: float = 0.0
    caught_up: bool = False
    shard_end: bool = False  # GetRecords returned no NextShardIterator
    millis_behind_latest: int | None = None
    last_consumed: tuple[int, int] | None = None  # (sequence, arrival ms) of the last record dropped
    waiting: tuple[int, ...] = ()
    listed: bool = True
    finished: bool = False

    def move_to(self, position: int) -> None:
        """The lake's position is now ``position``: drop what is below it; restart the read
        when the position is outside what is buffered (a replay, or a jump past the buffer)."""
        if position < self.covered_from or position > self.read_end:
            if self.records and self.records[-1].sequence < position:
                self.last_consumed = (self.records[-1].sequence, self.records[-1].arrival_ms)
            self.records, self.sequences = [], []
            self.covered_from = self.read_end = position
            self.caught_up = self.shard_end = self.finished = False
            self.iterator = None
        else:
            cut = bisect.bisect_left(self.sequences, position)
            if cut:
                last = self.records[cut - 1]
                self.last_consumed = (last.sequence, last.arrival_ms)
                del self.records[:cut], self.sequences[:cut]
            self.covered_from = position
        self.position = position

    def append(self, records: list[KinesisRecord]) -> None:
        fresh = [record for record in records if record.sequence >= self.read_end]
        if fresh:
            self.records.extend(fresh)
            self.sequences.extend(record.sequence for record in fresh)
            self.read_end = fresh[-1].sequence + 1

    def readable_end(self) -> int:
        """Exclusive end of what the planner may read: nothing past the position while waiting."""
        if self.waiting or not self.records:
            return self.position
        return self.records[-1].sequence + 1

    def reaches(self, target_ms: int) -> bool:
        return any(record.arrival_ms >= target_ms for record in self.records)


class KinesisLog:
    """The driver's view of one Kinesis stream, reused across batches (one per driver-side reader).

    Implements tidemark.aligned_slices.BatchedLogTimeIndex over the read-ahead buffer: the answers
    are about what ``fill`` has read, and the planner's log end is ``bounds()[p].end``. Call
    ``fill`` before planning; after a batch commits, the next ``fill`` with the new positions
    drops what was consumed.

    It is the Kinesis adapter of tidemark.partitioned_log.PartitionedLog (opened by
    connectors.partitioned_logs.open_log from a KinesisConnection): ``look`` is ``fill`` then
    ``bounds``, and what the driver read travels to the tasks (``in_hand``).
    """

    connection = None  # the KinesisConnection it was opened from (``of``)

    @classmethod
    def of(cls, connection, *, max_workers: int = 16, clock: Callable[[], float] = time.time) -> KinesisLog:
        """The log a tidemark.log_connection.KinesisConnection names, with its own client
        (credentials from the environment; the injected throttling when the connection asks)."""
        log = cls(
            connection.stream,
            connection.region,
            connection.endpoint,
            client=kinesis_client_for(connection, max_workers),
            clock=clock,
            max_calls_per_second=connection.max_calls_per_second,
            max_workers=max_workers,
        )
        log._own_client = True
        log.connection = connection
        return log

    def __init__(
        self,
        stream: str,
        region: str,
        endpoint: str | None = None,
        *,
        client=None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        max_calls_per_second: float = 5.0,
        max_records_per_call: int = 10_000,
        max_workers: int = 16,
        shard_refresh_s: float = SHARD_REFRESH_S,
    ):
        self._stream = stream
        self._region, self._endpoint, self._max_calls_per_second = region, endpoint, max_calls_per_second
        self._where = where_of(region, endpoint)
        self._own_client = client is None
        client = client if client is not None else kinesis_client(region, endpoint, max_workers)
        self._api = KinesisApi(client, stream, self._where, clock, sleep, max_calls_per_second)
        self._clock = clock
        self._sleep = sleep
        self._max_records_per_call = max_records_per_call
        self._max_workers = max_workers
        self._shard_refresh_s = shard_refresh_s
        self._listing: dict[int, ShardInfo] | None = None
        self._listed_at_s = 0.0
        self._summary: dict | None = None
        self._states: dict[int, _Shard] = {}
        self._pool: ThreadPoolExecutor | None = None

    def stream_reached(self) -> tuple[str, str, str | None]:
        """(stream name, region, endpoint): the first arguments of connectors.kinesis_shard_reads'
        functions."""
        return self._stream, self._region, self._endpoint

    def read_settings(self) -> dict:
        """The keyword arguments that make connectors.kinesis_shard_reads' functions read as this
        log does: its client, clock, sleep and per-shard call rate."""
        return {
            "client": self._api.client,
            "clock": self._clock,
            "sleep": self._sleep,
            "max_calls_per_second": self._max_calls_per_second,
        }

    def now_s(self) -> float:
        """This log's clock (seconds since the epoch)."""
        return self._clock()

    @property
    def calls(self) -> int:
        """Kinesis API calls made (every operation, throttled ones included)."""
        return self._api.calls

    @property
    def throttled_calls(self) -> int:
        """Calls Kinesis refused with a throttling error (backed off and retried, never raised)."""
        return self._api.throttled_calls

    # -- shards --------------------------------------------------------------------------

    def shards(self, refresh: bool = False) -> dict[int, ShardInfo]:
        """Every listed shard by partition (open ones and closed ones still within retention).

        ListShards, paginated: the first call names the stream, later ones only NextToken (the
        API refuses both). Listed again at most every ``shard_refresh_s`` unless ``refresh``, so
        shards created by a reshard while the job runs are picked up within that time.
        Raises KinesisStreamNotFoundError when the stream does not exist.
        """
        if not refresh and self._listing is not None and self._clock() - self._listed_at_s < self._shard_refresh_s:
            return self._listing
        listing: dict[int, ShardInfo] = {}
        params = {"StreamName": self._stream, "MaxResults": 10_000}
        while True:
            page = self._api.call("list_shards", None, None, **params)
            for raw in page.get("Shards", []):
                shard = shard_from_listing(raw)
                listing[shard.partition] = shard
            token = page.get("NextToken")
            if not token:
                break
            params = {"NextToken": token, "MaxResults": 10_000}
        self._listing = listing
        self._listed_at_s = self._clock()
        return listing

    def stream_summary(self) -> dict:
        """DescribeStreamSummary's answer, asked once per log (retention hours, creation time)."""
        if self._summary is None:
            answer = self._api.call("describe_stream_summary", None, None, StreamName=self._stream)
            self._summary = answer["StreamDescriptionSummary"]
        return self._summary

    # -- reading ahead ---------------------------------------------------------------------

    def fill(self, positions: Mapping[int, int], target_ms: int | None, max_records: int | None) -> None:
        """Read each shard of ``positions`` ({partition: position}) ahead into its buffer.

        First the records below each position are dropped (consumed). Then a shard is read
        until its buffer holds a record with arrival >= ``target_ms`` (None: until caught up),
        or ``max_records`` records, or it is caught up (an empty page with MillisBehindLatest 0)
        or finished. A shard whose parents are not finished is not read past its first record
        (peeked, so ``next_records`` answers for it; ``bounds`` shows nothing readable). Shards
        are read concurrently, each at most ``max_calls_per_second``. A partition no longer
        listed is not read (``bounds`` marks it unlisted). Raises KinesisUnavailableError (or a
        subclass) naming the stream, shard and endpoint when Kinesis cannot be read.
        """
        shards = self.shards()
        for partition, position in positions.items():
            state = self._states.get(partition)
            if state is None:
                state = self._states[partition] = _Shard(position, position, position)
            else:
                state.move_to(position)
            state.listed = partition in shards
        finished = self._finished(shards)
        work = []
        for partition in positions:
            state = self._states[partition]
            if not state.listed:
                continue
            state.waiting = waiting_for(partition, shards, finished)
            if not state.finished:
                work.append((shards[partition], state))
        if not work:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._max_workers, thread_name_prefix="kinesis-fill")
        fills = [self._pool.submit(self._fill_shard, shard, state, target_ms, max_records) for shard, state in work]
        for done in fills:
            done.result()
        for (shard, state), _ in zip(work, fills):
            state.finished = self._is_finished(shard, state)

    def _finished(self, shards: Mapping[int, ShardInfo]) -> set[int]:
        """Partitions whose shard is closed, read to its end and consumed: a child may start."""
        done = set()
        for partition, state in self._states.items():
            shard = shards.get(partition)
            if shard is not None and self._is_finished(shard, state):
                state.finished = True
                done.add(partition)
        return done

    @staticmethod
    def _is_finished(shard: ShardInfo, state: _Shard) -> bool:
        # The reader may have reached the end while records are still buffered: finished only
        # once the lake consumed them, so a child never starts before its parent's last record.
        return not state.records and is_finished(shard, state.read_end, state.caught_up, state.shard_end)

    def _fill_shard(self, shard: ShardInfo, state: _Shard, target_ms: int | None, max_records: int | None) -> None:
        pages = 0
        while True:
            if state.waiting:
                if state.records:
                    return
            elif (target_ms is not None and state.reaches(target_ms)) or (
                max_records is not None and len(state.records) >= max_records
            ):
                return
            if state.shard_end or (pages and state.caught_up):
                return
            iterator = self._iterator(shard, state)
            if iterator is None:
                return  # throttled: the next fill tries again
            if state.waiting:
                limit = 1
            elif max_records is None:
                limit = self._max_records_per_call
            else:
                limit = max(1, min(self._max_records_per_call, max_records - len(state.records)))
            page = self._get_records(shard, iterator, limit)
            if page is EXPIRED:
                state.iterator = None
                continue
            if page is None:
                return
            pages += 1
            self._absorb(state, page, limit)

    def _iterator(self, shard: ShardInfo, state: _Shard) -> str | None:
        fresh = self._clock() - state.iterator_issued_s < ITERATOR_LIFETIME_S
        if state.iterator is not None and state.iterator_at == state.read_end and fresh:
            return state.iterator
        iterator = self._per_shard(shard, self._api.iterator, shard.shard_id, state.read_end, shard.starting_sequence)
        if iterator is not None:
            state.iterator, state.iterator_at, state.iterator_issued_s = iterator, state.read_end, self._clock()
        return iterator

    def _get_records(self, shard: ShardInfo, iterator: str, limit: int):
        return self._per_shard(
            shard,
            self._api.call,
            "get_records",
            shard.shard_id,
            FILL_THROTTLE_RETRIES,
            ShardIterator=iterator,
            Limit=limit,
        )

    def _per_shard(self, shard: ShardInfo, ask, *args, **kwargs):
        """``ask(...)`` about ``shard``; a ResourceNotFoundException is told apart by listing
        again: the stream is gone, or only this shard is."""
        try:
            return ask(*args, **kwargs)
        except KinesisShardGoneError:
            raise
        except KinesisStreamNotFoundError:
            if shard.partition in self.shards(refresh=True):
                raise
            raise KinesisShardGoneError(
                f"shard {shard.shard_id} of Kinesis stream {self._stream!r} at {self._where} is no longer listed: it "
                "expired (RetentionPeriodHours) or the stream was recreated; lost_to_retention reports what the lake "
                "had not read of it",
                stream=self._stream,
                where=self._where,
                shard_id=shard.shard_id,
            ) from None

    def _absorb(self, state: _Shard, page: Mapping, limit: int) -> None:
        raw = page.get("Records", [])
        state.append([record_of(record) for record in raw])
        state.millis_behind_latest = page.get("MillisBehindLatest")
        following = page.get("NextShardIterator")
        if following is None:
            state.shard_end = True
            state.iterator = None
        else:
            # The new iterator continues after the page's last record: at read_end (records
            # below read_end, seen only after a TRIM_HORIZON fallback, are dropped by append).
            state.iterator, state.iterator_at, state.iterator_issued_s = following, state.read_end, self._clock()
        # At the tip: MillisBehindLatest 0 on an empty page, or on a page short of its limit (its
        # records reach the tip: asking again only to get an empty page would cost a call per
        # shard and planning, the call budget Kinesis shares among all consumers). A full page
        # may stop short of the tip whatever it says.
        if state.millis_behind_latest == 0 and len(raw) < limit:
            state.caught_up = True
        elif raw:
            state.caught_up = False
        # An empty page with MillisBehindLatest > 0 is not idleness: the records are further on.

    # -- what the planner sees ---------------------------------------------------------------

    def bounds(self) -> dict[int, ShardBounds]:
        """Every filled shard's bounds (see ShardBounds), by partition."""
        listing = self._listing or {}
        answers = {}
        for partition, state in self._states.items():
            shard = listing.get(partition)
            if shard is None or not state.listed:
                answers[partition] = ShardBounds(state.position, state.position, True, True, (), None, listed=False)
                continue
            answers[partition] = ShardBounds(
                earliest=shard.starting_sequence,
                end=state.readable_end(),
                caught_up=state.caught_up,
                finished=state.finished,
                waiting_for=state.waiting,
                millis_behind_latest=state.millis_behind_latest,
            )
        return answers

    def offset_for_time(self, partition: int, timestamp_ms: int) -> int | None:
        """The sequence of the first readable buffered record with arrival >= ``timestamp_ms``;
        None when the buffer holds none (Kinesis's AT_TIMESTAMP, over what was read)."""
        return self.offsets_for_time([partition], timestamp_ms)[partition]

    def offsets_for_time(self, partitions: Iterable[int], timestamp_ms: int) -> dict[int, int | None]:
        answers: dict[int, int | None] = {}
        for partition in partitions:
            state = self._states.get(partition)
            answers[partition] = None
            if state is None or state.waiting:
                continue
            for record in state.records:
                if record.arrival_ms >= timestamp_ms:
                    answers[partition] = record.sequence
                    break
        return answers

    def next_record(self, partition: int, offset: int) -> LoggedRecord | None:
        """The first buffered record with sequence >= ``offset`` (a waiting child's peeked first
        record included), as LoggedRecord(sequence, arrival ms); None when none is buffered."""
        return self.next_records({partition: offset})[partition]

    def next_records(self, offsets: Mapping[int, int]) -> dict[int, LoggedRecord | None]:
        answers: dict[int, LoggedRecord | None] = {}
        for partition, offset in offsets.items():
            state = self._states.get(partition)
            answers[partition] = None
            if state is not None:
                at = bisect.bisect_left(state.sequences, offset)
                if at < len(state.records):
                    answers[partition] = LoggedRecord(state.records[at].sequence, state.records[at].arrival_ms)
        return answers

    def last_record_time(self, partition: int, end: int) -> int | None:
        """The arrival (ms) of the last record read with sequence < ``end``, buffered or already
        consumed (the last one dropped); None when this log has not read it."""
        return self.last_record_times({partition: end})[partition]

    def last_record_times(self, ends: Mapping[int, int]) -> dict[int, int | None]:
        answers: dict[int, int | None] = {}
        for partition, end in ends.items():
            state = self._states.get(partition)
            answers[partition] = None
            if state is None:
                continue
            at = bisect.bisect_left(state.sequences, end)
            if at:
                answers[partition] = state.records[at - 1].arrival_ms
            elif state.last_consumed is not None and state.last_consumed[0] < end:
                answers[partition] = state.last_consumed[1]
        return answers

    # -- counting and handing over records, without arithmetic on positions ---------------------

    def records_between(self, partition: int, start: int, end: int) -> int:
        """How many buffered records have start <= sequence < end."""
        state = self._states.get(partition)
        if state is None or end <= start:
            return 0
        return bisect.bisect_left(state.sequences, end) - bisect.bisect_left(state.sequences, start)

    def position_after(self, partition: int, start: int, count: int) -> int:
        """The exclusive end after the ``count``-th buffered record at or after ``start``
        (``start`` for 0); the readable end when fewer are buffered."""
        state = self._states.get(partition)
        if state is None or count <= 0:
            return start
        first = bisect.bisect_left(state.sequences, start)
        last = first + count - 1
        if last < len(state.sequences):
            return min(state.sequences[last] + 1, max(start, state.readable_end()))
        return max(start, state.readable_end())

    def take(self, partition: int, start: int, end: int) -> list[KinesisRecord] | None:
        """The buffered records with start <= sequence < end, in order; None when the buffer does
        not hold that whole range (then read it with ``read_range``)."""
        if end <= start:
            return []
        state = self._states.get(partition)
        # The buffer holds every record of [covered_from, read_end); a waiting child's peeked
        # record is not readable yet.
        if state is None or state.waiting or start < state.covered_from or end > state.read_end:
            return None
        return state.records[bisect.bisect_left(state.sequences, start) : bisect.bisect_left(state.sequences, end)]

    # -- retention -------------------------------------------------------------------------------

    def lost_to_retention(self, state) -> tuple[LostRange, ...]:
        """The ranges at the positions of ``state`` (a tidemark.source_state.SourceState) that
        expired before they were read: ``lost_at_positions`` with what the state remembers."""
        from tidemark.partition_status import PartitionStatus

        return tuple(
            self.lost_at_positions(
                state.positions(),
                last_read_ms={p: s.last_produced_ms for p, s in state.partitions.items() if s.last_produced_ms},
                finished=[p for p, s in state.partitions.items() if s.status == PartitionStatus.FINISHED],
            )
        )

    def lost_at_positions(
        self,
        positions: Mapping[int, int],
        *,
        last_read_ms: Mapping[int, int] | None = None,
        finished: Iterable[int] = (),
        lake_began_ms: int | None = None,
    ) -> list[LostRange]:
        """The ranges at the lake's ``positions`` that expired before they were read.

        What can be known: within a shard, sequence numbers and arrival times rise together, and
        Kinesis keeps every record younger than RetentionPeriodHours (R). Let L be the earliest
        time an unread record at or after a position can have arrived: the arrival of the last
        record read before it (this log's memory, or ``last_read_ms`` from the ledger). If
        L >= now − R, nothing unread has expired: no question is asked. Otherwise the trim
        horizon's first record e is read: when e > position, every record that was in
        [position, e) has expired unread, and the range is reported. What cannot be known:
        whether that range held any record at all (sequence numbers are sparse), so a report
        means "possibly lost, count unknown"; the job still stops (never skip silently).

        A shard at its starting sequence that the lake never read (no L): what retention removed
        before the lake began was never the lake's to read (like starting at TRIM_HORIZON), so it
        is checked only when ``lake_began_ms`` says since when the lake is answerable for the
        stream (then L = max(lake_began_ms, the stream's creation)). A shard no longer listed
        expired whole: it counts as finished, not lost, when the lake never read it or finished
        it (``finished``); otherwise the rest of it, [position, its end), is reported with end None.
        """
        last_read_ms = dict(last_read_ms or {})
        finished = set(finished)
        shards = self.shards(refresh=True)
        summary = self.stream_summary()
        horizon_ms = int(self._clock() * 1000) - int(summary.get("RetentionPeriodHours", 24)) * 3_600_000
        created = summary.get("StreamCreationTimestamp")
        created_ms = int(created.timestamp() * 1000) if hasattr(created, "timestamp") else None
        lost = []
        for partition, position in sorted(positions.items()):
            if partition in finished:
                continue
            remembered = self.last_record_times({partition: position})[partition]
            known = [t for t in (remembered, last_read_ms.get(partition)) if t is not None]
            earliest_unread_ms = max(known) if known else None
            state = self._states.get(partition)
            shard = shards.get(partition)
            if shard is None:
                if earliest_unread_ms is None or (state is not None and state.finished):
                    continue
                lost.append(LostRange(partition, position, None))
                continue
            if earliest_unread_ms is None and position <= shard.starting_sequence:
                if lake_began_ms is None:
                    continue  # never read, and the lake answers only for what it has read
                earliest_unread_ms = max(lake_began_ms, created_ms) if created_ms is not None else lake_began_ms
            if earliest_unread_ms is not None and earliest_unread_ms >= horizon_ms:
                continue
            first = self._trim_horizon(shard)
            if first is None:
                if shard.closed and shard.ending_sequence < position:
                    continue  # read to its end already
                lost.append(LostRange(partition, position, None))
            elif first > position:
                lost.append(LostRange(partition, position, first))
        return lost

    def _trim_horizon(self, shard: ShardInfo) -> int | None:
        """The sequence of the shard's first retained record; None when it retains none."""
        iterator = self._per_shard(
            shard, self._api.iterator, shard.shard_id, shard.starting_sequence, shard.starting_sequence
        )
        while iterator is None:  # throttled: the iterator call has backed off; ask again
            iterator = self._api.iterator(shard.shard_id, shard.starting_sequence, shard.starting_sequence)
        for _ in range(HORIZON_PAGES):
            page = self._per_shard(
                shard, self._api.call, "get_records", shard.shard_id, None, ShardIterator=iterator, Limit=1
            )
            if page is EXPIRED:
                iterator = self._api.iterator(shard.shard_id, shard.starting_sequence, shard.starting_sequence)
                continue
            if page["Records"]:
                return int(page["Records"][0]["SequenceNumber"])
            if page.get("NextShardIterator") is None or page.get("MillisBehindLatest") == 0:
                return None
            iterator = page["NextShardIterator"]
        return None

    # -- the rest of tidemark.partitioned_log.PartitionedLog ----------------------------------------

    def partition_ids(self) -> list[int]:
        return sorted(self.shards())

    def first_positions(self, partitions: Iterable[int], starting: str = "earliest") -> dict[int, int]:
        """Each shard's starting sequence number (TRIM_HORIZON): a shard has no position before
        its first record, so "latest" is refused at start-up (spark_jobs.persist.pipeline)."""
        shards = self.shards()
        return {p: shards[p].starting_sequence for p in partitions if p in shards}

    def look(self, positions: Mapping[int, int], target_ms: int | None = None, max_records: int | None = None) -> dict:
        """``fill`` from ``positions``, then every filled shard as the planner sees it: held while
        it waits for its parents or is behind its tip with no record in hand."""
        from tidemark.partitioned_log import PartitionView

        self.fill(positions, target_ms, max_records)
        views = {}
        for partition, shard in self.bounds().items():
            behind = shard.end <= positions.get(partition, shard.end) and not shard.caught_up
            views[partition] = PartitionView(
                shard.earliest,
                shard.end,
                shard.end,
                held=bool(shard.waiting_for) or behind,
                finished=shard.finished,
                caught_up=shard.caught_up,
            )
        return views

    def in_hand(self, partition: int, start: int, end: int) -> list[KinesisRecord] | None:
        return self.take(partition, start, end)

    def available_now_end(self):
        """What arrived before now: an available_now run leaves later records for the next run."""
        cutoff_ms = int(self._clock() * 1000)

        def end_of_run(partition: int, end: int) -> int:
            cut = self.offset_for_time(partition, cutoff_ms)
            return min(end, cut) if cut is not None else end

        return end_of_run

    def progress(self) -> dict:
        bounds = self.bounds()
        return {
            "millis_behind_latest": {str(p): b.millis_behind_latest for p, b in sorted(bounds.items())},
            "throttled_calls": self.throttled_calls,
        }

    def read_ranges(self, ranges: Mapping[int, tuple[int, int]]) -> Iterator[tuple[int, list[KinesisRecord]]]:
        """The records of each {partition: (start, end)}, shard by shard (``read_range``)."""
        for partition, (start, end) in sorted(ranges.items()):
            records = list(
                read_range(*self.stream_reached(), shard_id_of(partition), start, end, **self.read_settings())
            )
            if records:
                yield partition, records

    # -- look-ups (connectors.kinesis_lookups) -----------------------------------------------------

    def bounds_now(self, positions: Mapping[int, int], finished: Iterable[int], check_retention: bool) -> dict:
        return kinesis_lookups.bounds_now(self, positions, finished, check_retention)

    def look_before_run(self, ledger: Mapping) -> dict:
        return kinesis_lookups.look_before_run(self, ledger)

    def unread_now(self, positions: Mapping[int, int], finished: Iterable[int]):
        return kinesis_lookups.unread_now(self, positions, finished)

    def plan_recovery(self, request):
        return kinesis_lookups.plan_recovery(self, request)

    def backfill_indexes(self, request) -> dict:
        return kinesis_lookups.backfill_indexes(self, request)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if self._own_client and hasattr(self._api.client, "close"):
            self._api.client.close()
