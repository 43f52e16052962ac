"""What the quality run and the watermark page ask of a stream's log now, for either kind of log.

``read_log_bounds(stream, positions)`` → {partition: bounds}, each with at least ``earliest`` and
``end`` (expectations.quality_verdicts.LogBoundsView):

- Kafka: connectors.kafka_log.LogBounds from ListOffsets (earliest retained offset, last stable
  offset), unchanged; ``positions`` are not needed.
- Kinesis: ShardLogBounds, one per listed shard and per position given. One GetRecords of at most
  ``PROBE_RECORDS`` records at the lake's position says whether unread records exist and how far
  behind the shard's tip the position is (``millis_behind_latest``, ms). Kinesis has no API for
  a shard's newest sequence number either: for a shard with unread records, ``end`` is its tip
  found from the newest arrivals (connectors.kinesis_log.shard_tips), so a recovery of
  [position, end) replays everything unread at the check, as Kafka's log end does. ``earliest`` is the first retained sequence number when a
  retention check found records expired unread at the position (``lost``), else the shard's
  starting sequence number. Nothing here subtracts sequence numbers.

A shard the ledger marks FINISHED (closed and read to its end) is not read: it can hold nothing
unread.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from tidemark.shard_lineage import shard_id_of
from tidemark.stream_config import StreamConfig

# Records one probe reads per shard: one says whether unread records exist; a few keep an empty
# first page (Kinesis may answer one while behind) from hiding them.
PROBE_RECORDS = 10


@dataclass(frozen=True)
class ShardLogBounds:
    """A Kinesis shard as the checks see it at the lake's ``position`` (sequence numbers as ints).

    ``end``: exclusive end of the shard's records now when unread records exist (its tip), else
    ``position``: more than ``position`` exactly when unread records exist. ``caught_up``: the probe's last page was empty
    with MillisBehindLatest 0. ``millis_behind_latest``: how far (ms) the position is behind the
    shard's tip, as Kinesis reported it (None: not asked, e.g. a finished shard).
    ``finished``: closed and read to its end (the ledger's FINISHED, or the probe found its end).
    ``lost``: the sequence range that expired before the lake read it (its record count is
    unknowable), or None."""

    partition: int
    shard_id: str
    position: int | None
    earliest: int
    end: int
    caught_up: bool
    millis_behind_latest: int | None
    finished: bool
    listed: bool = True
    lost: object | None = None  # tidemark.retention_loss.LostRange
    first_unread_ms: int | None = None  # arrival (ms, UTC) of the first record past the position

    @property
    def unread(self) -> bool:
        """Records exist past the lake's position (the stall rules' "lag > 0")."""
        return self.position is not None and self.end > self.position


def read_log_bounds(
    stream: StreamConfig,
    positions: Mapping[int, int] | None = None,
    finished: Collection[int] = (),
    *,
    timeout_s: float | None = None,
    check_retention: bool = True,
    client=None,
    clock=time.time,
    sleep=time.sleep,
) -> dict:
    """Every partition of the stream's log → its bounds now (see the module's docstring).

    ``positions``: the lake's live position per partition (Kinesis: where to probe; a listed
    shard without one is probed at its starting sequence number). ``finished``: partitions the
    ledger marks FINISHED. ``check_retention``: Kinesis only, ask whether records expired unread
    at the positions (a trim-horizon read per shard older than the stream's retention).
    Raises ValueError when the topic or stream does not exist, and the log's own errors
    (KafkaUnavailableError, connectors.kinesis_log.KinesisUnavailableError) when it cannot be
    read; each names the topic or stream and where it was looked for. ``client``, ``clock`` and
    ``sleep`` (Kinesis) stand in for boto3's client and the time in tests."""
    if stream.source.kind == "kinesis":
        return _kinesis_bounds(stream, positions or {}, set(finished), check_retention, client, clock, sleep)
    from connectors.kafka_log import KafkaLog

    kafka = (
        KafkaLog(stream.source.bootstrap_servers, stream.source.topic)
        if timeout_s is None
        else KafkaLog(stream.source.bootstrap_servers, stream.source.topic, timeout_s=timeout_s)
    )
    try:
        return kafka.partition_bounds()
    finally:
        kafka.close()


def _kinesis_bounds(stream, positions: Mapping[int, int], finished: set[int], check_retention, client, clock, sleep):
    from connectors.kinesis_log import KinesisLog, KinesisStreamNotFoundError, kinesis_client, shard_tips

    source = stream.source
    own_client = client is None
    client = kinesis_client(source.region, source.endpoint, 4) if own_client else client
    log = KinesisLog(
        source.stream, source.region, source.endpoint, client=client, max_workers=4, clock=clock, sleep=sleep
    )
    try:
        try:
            shards = log.shards(refresh=True)
        except KinesisStreamNotFoundError as error:
            raise ValueError(str(error)) from error
        at = {p: positions.get(p, shard.starting_sequence) for p, shard in shards.items()}
        at.update({p: position for p, position in positions.items() if p not in at})
        probed = {p: position for p, position in at.items() if p in shards and p not in finished}
        log.fill(probed, None, PROBE_RECORDS)
        read = log.bounds()
        first_unread = log.next_records(probed)
        unread = [shards[p].shard_id for p, position in probed.items() if p in read and read[p].end > position]
        tips = shard_tips(
            source.stream, source.region, source.endpoint, unread, client=client, clock=clock, sleep=sleep
        )
        lost = {}
        if check_retention:
            checked = {p: position for p, position in at.items() if p in positions and p not in finished}
            # Every record of the stream arrived after the stream was created: a stream younger
            # than its retention has lost nothing, and no trim horizon needs to be read.
            created = client.describe_stream_summary(StreamName=source.stream)["StreamDescriptionSummary"].get(
                "StreamCreationTimestamp"
            )
            arrived_after = {p: int(created.timestamp() * 1000) for p in checked} if created is not None else {}
            lost = {
                gone.partition: gone
                for gone in log.lost_at_positions(checked, last_read_ms=arrived_after, finished=finished)
            }
    finally:
        log.close()
        if own_client:
            client.close()
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
