"""What the jobs ask of a Kinesis stream before they read it (the look-ups of
tidemark.partitioned_log.PartitionedLog; the methods of connectors.kinesis_log.KinesisLog call
these).

Kinesis names no shard's newest sequence number and keeps its time index in the service, so the
answers are read: a probe of at most ``PROBE_RECORDS`` records at the lake's position says
whether unread records exist and how far behind the shard's tip the position is
(``millis_behind_latest``, ms); a shard's end is its tip found from the newest arrivals
(connectors.kinesis_shard_reads.shard_tips), so a recovery of [position, end) replays
everything unread at the check, as Kafka's log end does; a backfill window's positions come
from AT_TIMESTAMP (arrival times, never event times). What retention took is read from a shard's
trim horizon, and only when the stream is older than its retention. Sequence numbers are sparse:
nothing here subtracts them.

A shard the ledger marks FINISHED (closed and read to its end) is not read: it can hold nothing
unread.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from connectors.kinesis_api import KinesisStreamNotFoundError
from connectors.kinesis_shard_reads import first_records_at, read_range, shard_tips
from connectors.reachable import reachable
from tidemark.backfill_plan import PartitionTimeIndex, kinesis_shard_index
from tidemark.backfill_request import BackfillRequest, BackfillRequestError
from tidemark.log_position import POSITION_KEY_DIGITS
from tidemark.nothing_new import LedgerPartition, LogPartitionNow
from tidemark.partition_status import PartitionStatus
from tidemark.partitioned_log import UnreadNow
from tidemark.recovery_plan import RecoveryPlan
from tidemark.recovery_request import (
    RecoveryRequest,
    RecoveryRequestError,
    order_by_retention_deadline,
    split_by_retention,
)
from tidemark.retention_loss import LostRange
from tidemark.shard_lineage import shard_id_of

# Records one probe reads per shard: one says whether unread records exist; a few keep an empty
# first page (Kinesis may answer one while behind) from hiding them.
PROBE_RECORDS = 10


@dataclass(frozen=True)
class ShardLogBounds:
    """A Kinesis shard as the checks see it at the lake's ``position`` (sequence numbers as ints).

    ``end``: exclusive end of the shard's records now when unread records exist (its tip), else
    ``position``: more than ``position`` exactly when unread records exist. ``caught_up``: the
    probe's last page was empty with MillisBehindLatest 0. ``millis_behind_latest``: how far (ms)
    the position is behind the shard's tip, as Kinesis reported it (None: not asked, e.g. a
    finished shard). ``finished``: closed and read to its end (the ledger's FINISHED, or the
    probe found its end). ``listed``: ListShards names it. ``lost``: the sequence range that
    expired before the lake read it (its record count is unknowable), or None.
    ``first_unread_ms``: arrival (ms, UTC) of the first record past the position."""

    partition: int
    shard_id: str
    position: int | None
    earliest: int
    end: int
    caught_up: bool
    millis_behind_latest: int | None
    finished: bool
    listed: bool = True
    lost: LostRange | None = None
    first_unread_ms: int | None = None

    @property
    def unread(self) -> bool:
        """Records exist past the lake's position (the stall rules' "lag > 0")."""
        return self.position is not None and self.end > self.position


def bounds_now(
    kinesis, positions: Mapping[int, int], finished: Collection[int], check_retention: bool
) -> dict[int, ShardLogBounds]:
    """One ShardLogBounds per listed shard and per position given; a listed shard without a
    position is probed at its starting sequence number. ``check_retention``: also read whether
    records expired unread at the positions (a trim-horizon read per shard, only when the stream
    is older than its retention)."""
    finished = set(finished)
    try:
        shards = kinesis.shards(refresh=True)
    except KinesisStreamNotFoundError as error:
        raise ValueError(str(error)) from error
    at = {p: positions.get(p, shard.starting_sequence) for p, shard in shards.items()}
    at.update({p: position for p, position in positions.items() if p not in at})
    probed = {p: position for p, position in at.items() if p in shards and p not in finished}
    kinesis.fill(probed, None, PROBE_RECORDS)
    read = kinesis.bounds()
    first_unread = kinesis.next_records(probed)
    unread = [shards[p].shard_id for p, position in probed.items() if p in read and read[p].end > position]
    tips = shard_tips(*kinesis.stream_reached(), unread, **kinesis.read_settings())
    lost = {}
    if check_retention:
        checked = {p: position for p, position in at.items() if p in positions and p not in finished}
        # Every record of the stream arrived after the stream was created: a stream younger than
        # its retention has lost nothing, and no trim horizon needs to be read.
        created = kinesis.stream_summary().get("StreamCreationTimestamp")
        arrived_after = {p: int(created.timestamp() * 1000) for p in checked} if created is not None else {}
        lost = {
            gone.partition: gone
            for gone in kinesis.lost_at_positions(checked, last_read_ms=arrived_after, finished=finished)
        }
    answers = {}
    for partition, position in sorted(at.items()):
        shard = shards.get(partition)
        gone = lost.get(partition)
        if shard is None or partition in finished or partition not in read:
            answers[partition] = ShardLogBounds(
                partition,
                shard.shard_id if shard is not None else shard_id_of(partition),
                positions.get(partition),
                position,
                position,
                True,
                None,
                finished=partition in finished or shard is None,
                listed=shard is not None,
                lost=gone,
            )
            continue
        bounds = read[partition]
        earliest = shard.starting_sequence
        if gone is not None:
            # Nothing retained at all: everything up to what the probe found is gone.
            earliest = gone.end if gone.end is not None else max(bounds.end, position + 1)
        answers[partition] = ShardLogBounds(
            partition,
            shard.shard_id,
            positions.get(partition),
            earliest,
            max(bounds.end, position, tips.get(partition) or position),
            bounds.caught_up,
            bounds.millis_behind_latest,
            finished=bounds.finished,
            lost=gone,
            first_unread_ms=None if first_unread.get(partition) is None else first_unread[partition].timestamp_ms,
        )
    return answers


def look_before_run(kinesis, ledger: Mapping[int, LedgerPartition]) -> dict[int, LogPartitionNow]:
    """Every shard probed at the ledger's position (no retention read). Kinesis tells no shard's
    last arrival here: an ACTIVE shard may turn IDLE, so its last record's time stays unknown."""
    positions = {p: row.position for p, row in ledger.items()}
    finished = [p for p, row in ledger.items() if row.status == PartitionStatus.FINISHED]
    bounds = bounds_now(kinesis, positions, finished, check_retention=False)
    return {
        p: LogPartitionNow(
            b.earliest,
            b.end,
            unsettled=None
            if b.caught_up or p in finished
            else "the probe ended behind the shard's tip (MillisBehindLatest > 0)",
            finished=b.finished and p not in finished,
        )
        for p, b in bounds.items()
        if b.listed or p in ledger
    }


def unread_now(kinesis, positions: Mapping[int, int], finished: Collection[int]) -> UnreadNow:
    """Each shard probed at the lake's position (no retention read): its end as "unread or not"
    (the position + 1, or the position), and per shard with unread records the arrival time of
    the first one (its deadline is that plus the retention). A FINISHED shard is not asked."""
    endpoint = kinesis.stream_reached()[2]
    if endpoint:
        from urllib.parse import urlsplit

        url = urlsplit(endpoint)
        reachable(f"{url.hostname}:{url.port or (443 if url.scheme == 'https' else 80)}")
    ends, oldest = {}, {}
    for partition, shard in bounds_now(kinesis, positions, finished, check_retention=False).items():
        position = positions.get(partition, shard.earliest)
        ends[partition] = position + 1 if shard.end > position else position
        if shard.end > position:
            oldest[partition] = shard.first_unread_ms
    return UnreadNow(ends, oldest)


def plan_recovery(kinesis, request: RecoveryRequest) -> RecoveryPlan:
    """Sequence ranges [start, end) of one shard. The shard must be listed (open, or closed and
    still retained); the part of a range below the shard's first retained record (its trim
    horizon) expired and is lost, naming the shard and the sequence range. How many records a
    lost range held is unknowable (sequence numbers are sparse), possibly none.

    No record time is asked for: within a shard arrival times rise with sequence numbers, so the
    lowest range is the oldest, and a request names one shard."""
    partition = request.partition
    shards = kinesis.shards(refresh=True)
    if partition not in shards:
        raise RecoveryRequestError(
            "partition",
            f"Kinesis stream {kinesis.stream_reached()[0]!r} lists no shard {shard_id_of(partition)} "
            f"(partition {partition}): it expired whole (RetentionPeriodHours) or never existed, so nothing of it "
            f"can be replayed; listed shards: {', '.join(str(p) for p in sorted(shards)) or '(none)'}",
        )
    # The trim horizon is read whatever the lake remembers (lake_began_ms=0: a stream younger
    # than its retention has lost nothing and is not asked).
    expired = kinesis.lost_at_positions({partition: request.ranges[0].start}, lake_began_ms=0)
    if not expired:
        first_retained = request.ranges[0].start
    elif expired[0].end is None:
        first_retained = request.ranges[-1].end  # nothing at or after the first range is retained
    else:
        first_retained = expired[0].end
    recoverable, lost = split_by_retention(request.ranges, first_retained)
    return RecoveryPlan(
        order_by_retention_deadline([(partition, r, None) for r in recoverable]),
        lost,
        {
            "shard_id": shards[partition].shard_id,
            # None: nothing expired below the first range, or nothing after it is retained at all.
            "first_retained_sequence": str(expired[0].end) if expired and expired[0].end is not None else None,
        },
    )


def backfill_indexes(kinesis, request: BackfillRequest) -> dict[int, PartitionTimeIndex]:
    """Every requested shard's index (no shards requested: every shard the stream lists, closed
    ones still retained included), from AT_TIMESTAMP at the window's start and end; the trim
    horizon only when the stream is older than its retention."""
    stream = kinesis.stream_reached()[0]
    shards = kinesis.shards(refresh=True)
    missing = sorted(set(request.partitions) - set(shards))
    if missing:
        raise BackfillRequestError(
            "partitions",
            f"Kinesis stream {stream!r} lists no shard {shard_id_of(missing[0])} (partition {missing[0]}): it "
            "expired whole (RetentionPeriodHours) or never existed; listed shards: "
            + (", ".join(str(p) for p in sorted(shards)) or "(none)"),
        )
    asked = {p: shards[p] for p in (request.partitions or sorted(shards))}
    ids = [shard.shard_id for shard in asked.values()]

    def at(timestamp_ms: int | None) -> dict:
        return first_records_at(*kinesis.stream_reached(), ids, timestamp_ms, **kinesis.read_settings())

    summary = kinesis.stream_summary()
    retained_since_ms = int(kinesis.now_s() * 1000) - int(summary.get("RetentionPeriodHours", 24)) * 3_600_000
    created = summary.get("StreamCreationTimestamp")
    if created is not None and int(created.timestamp() * 1000) >= retained_since_ms:
        retained_since_ms = None  # younger than its retention: nothing has expired
    at_start, at_end = at(request.start_ms), at(request.end_ms)
    horizon = at(None) if retained_since_ms is not None else {}
    indexes = {}
    for partition, shard in asked.items():
        first = at_start[partition]
        end = None
        if first is not None:
            following = at_end[partition]
            if following is not None:
                end = following.offset
            elif shard.closed:
                end = shard.ending_sequence + 1
            else:
                end = _end_before(kinesis, shard.shard_id, first.offset, request.end_ms)
        indexes[partition] = kinesis_shard_index(first, end, horizon.get(partition), retained_since_ms)
    return indexes


def _end_before(kinesis, shard_id: str, start: int, end_ms: int) -> int:
    """The exclusive end of an open shard's records from ``start`` that arrived before ``end_ms``,
    when none arrived at or after it: the shard is read to its tip (the window's records once,
    in the driver; a window that ends before the shard's last record never comes here)."""
    end = start
    for record in read_range(
        *kinesis.stream_reached(), shard_id, start, 10**POSITION_KEY_DIGITS, **kinesis.read_settings()
    ):
        if record.arrival_ms >= end_ms:
            return record.sequence  # arrived while this was read: the next window's
        end = record.sequence + 1
    return end
