"""Reading a Kinesis shard from the service, outside the driver's read-ahead buffer.

``read_range`` replays an exact sequence range (a Spark task whose range the driver's buffer no
longer holds: a replay after a restart, a recovery, a backfill); ``first_records_at`` asks
Kinesis's own time index (AT_TIMESTAMP, or TRIM_HORIZON); ``shard_tips`` finds where a shard's
records end now, which Kinesis names nowhere. Each makes its own connectors.kinesis_api.KinesisApi
from the stream's name, region, endpoint and client, so it runs in any process.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

from connectors.kinesis_api import EXPIRED, KinesisApi, KinesisRecord, kinesis_client, record_of, where_of
from tidemark.aligned_slices import LoggedRecord
from tidemark.shard_lineage import partition_of


def read_range(
    stream: str,
    region: str,
    endpoint: str | None,
    shard_id: str,
    start: int,
    end: int,
    *,
    client=None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    max_calls_per_second: float = 5.0,
) -> Iterator[KinesisRecord]:
    """The records of one shard with start <= sequence < end, in order, read from Kinesis.

    For Spark tasks replaying a range the driver's buffer no longer holds. Deterministic for
    ranges below what was already read: it stops at the first sequence >= ``end``, at the shard's
    end (no NextShardIterator) or when caught up (an empty page with MillisBehindLatest 0), and
    follows empty pages with MillisBehindLatest > 0. Throttling backs off and retries (never
    raised); an expired iterator is replaced at the last position read. Raises
    KinesisUnavailableError (or a subclass) naming the stream, shard and endpoint.
    """
    if end <= start:
        return
    api = _api(stream, region, endpoint, client, clock, sleep, max_calls_per_second, 1)
    position = start
    iterator = None
    while True:
        while iterator is None:
            # A start of 0 or below cannot be "after" anything Kinesis accepts: read from the horizon.
            iterator = api.iterator(shard_id, position, 0 if position <= 0 else None)
        page = api.call("get_records", shard_id, None, ShardIterator=iterator, Limit=10_000)
        if page is EXPIRED:
            iterator = None
            continue
        for raw in page.get("Records", []):
            record = record_of(raw)
            if record.sequence < position:
                continue
            if record.sequence >= end:
                return
            yield record
            position = record.sequence + 1
        iterator = page.get("NextShardIterator")
        if iterator is None or (not page.get("Records") and page.get("MillisBehindLatest") == 0):
            return


def first_records_at(
    stream: str,
    region: str,
    endpoint: str | None,
    shard_ids: Iterable[str],
    timestamp_ms: int | None,
    *,
    client=None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    max_calls_per_second: float = 5.0,
    max_workers: int = 16,
) -> dict[int, LoggedRecord | None]:
    """Kinesis's time index, asked of the service: per shard (by partition), the first record whose
    ApproximateArrivalTimestamp is at or after ``timestamp_ms`` (ms, UTC), as
    LoggedRecord(sequence, arrival ms); ``timestamp_ms`` None asks for the first retained record
    (TRIM_HORIZON). None for a shard that holds no such record now: it is caught up (an empty page
    with MillisBehindLatest 0) or closed and read to its end before one.

    AT_TIMESTAMP is the *arrival* time Kinesis stamped, never a producer's event time; a time
    older than the trim horizon answers the first retained record. Empty pages with
    MillisBehindLatest > 0 are followed (the records are further on); throttling backs off and
    retries; an expired iterator is asked for again. Shards are asked concurrently (at most
    ``max_workers`` at a time), each call within the per-shard rate. Raises
    KinesisUnavailableError (or a subclass) naming the stream, shard and endpoint.
    """
    import datetime

    api = _api(stream, region, endpoint, client, clock, sleep, max_calls_per_second, max_workers)
    if timestamp_ms is None:
        ask = {"ShardIteratorType": "TRIM_HORIZON"}
    else:
        at = datetime.datetime.fromtimestamp(timestamp_ms / 1000, tz=datetime.UTC)
        ask = {"ShardIteratorType": "AT_TIMESTAMP", "Timestamp": at}

    def iterator(shard_id: str) -> str:
        answer = api.call("get_shard_iterator", shard_id, None, StreamName=stream, ShardId=shard_id, **ask)
        return answer["ShardIterator"]

    def first(shard_id: str) -> LoggedRecord | None:
        current = iterator(shard_id)
        while True:
            page = api.call("get_records", shard_id, None, ShardIterator=current, Limit=100)
            if page is EXPIRED:
                current = iterator(shard_id)
                continue
            for raw in page.get("Records", []):
                record = record_of(raw)
                # Kinesis answers at or after the time; a record stamped a fraction of a
                # millisecond earlier than asked is not "at or after" in milliseconds.
                if timestamp_ms is None or record.arrival_ms >= timestamp_ms:
                    return LoggedRecord(record.sequence, record.arrival_ms)
            following = page.get("NextShardIterator")
            if following is None or (not page.get("Records") and page.get("MillisBehindLatest") == 0):
                return None
            current = following

    return _per_shard(first, shard_ids, max_workers)


# How far back ``shard_tips`` looks for a shard's newest record, widening until it finds one (ms):
# a busy shard answers within the first minute, a quiet one within the retention.
TIP_LOOKBACKS_MS = (60_000, 15 * 60_000, 2 * 3_600_000, 24 * 3_600_000, 7 * 24 * 3_600_000)


def shard_tips(
    stream: str,
    region: str,
    endpoint: str | None,
    shard_ids: Iterable[str],
    *,
    client=None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    max_calls_per_second: float = 5.0,
    max_workers: int = 16,
    lookbacks_ms: Sequence[int] = TIP_LOOKBACKS_MS,
) -> dict[int, int | None]:
    """Per shard (by partition), the exclusive end of its records now: its newest record's
    sequence number + 1 (None: no record retained within the longest look back).

    Kinesis names no shard's newest sequence number. The newest records are found from their
    arrival: AT_TIMESTAMP a minute ago, read to the tip (a page at MillisBehindLatest 0 that is
    not full, or an empty one); none, then further back (``lookbacks_ms``). The cost is reading
    what arrived in the first window that holds a record: for a recovery request of a stalled
    shard, which must name everything unread up to now, not only what a probe read. Shards are
    asked concurrently; the rate, throttling and errors as ``first_records_at``."""
    import datetime

    api = _api(stream, region, endpoint, client, clock, sleep, max_calls_per_second, max_workers)

    def newest_since(shard_id: str, since_ms: int) -> int | None:
        at = datetime.datetime.fromtimestamp(since_ms / 1000, tz=datetime.UTC)
        ask = {"ShardIteratorType": "AT_TIMESTAMP", "Timestamp": at}
        current = api.call("get_shard_iterator", shard_id, None, StreamName=stream, ShardId=shard_id, **ask)[
            "ShardIterator"
        ]
        newest = None
        while True:
            page = api.call("get_records", shard_id, None, ShardIterator=current, Limit=10_000)
            if page is EXPIRED:
                current = api.call(
                    "get_shard_iterator",
                    shard_id,
                    None,
                    StreamName=stream,
                    ShardId=shard_id,
                    ShardIteratorType="AFTER_SEQUENCE_NUMBER" if newest is not None else "AT_TIMESTAMP",
                    **({"StartingSequenceNumber": str(newest)} if newest is not None else {"Timestamp": at}),
                )["ShardIterator"]
                continue
            records = page.get("Records", [])
            if records:
                newest = record_of(records[-1]).sequence
            following = page.get("NextShardIterator")
            at_tip = page.get("MillisBehindLatest") == 0 and len(records) < 10_000
            if following is None or at_tip:
                return newest
            current = following

    def tip(shard_id: str) -> int | None:
        now_ms = int(clock() * 1000)
        for lookback in lookbacks_ms:
            newest = newest_since(shard_id, now_ms - lookback)
            if newest is not None:
                return newest + 1
        return None

    return _per_shard(tip, shard_ids, max_workers)


def _api(
    stream: str, region: str, endpoint: str | None, client, clock, sleep, max_calls_per_second: float, workers: int
):
    """The calls of one read: the caller's client, or one of its own for ``workers`` threads."""
    client = client if client is not None else kinesis_client(region, endpoint, workers)
    return KinesisApi(client, stream, where_of(region, endpoint), clock, sleep, max_calls_per_second)


def _per_shard(ask: Callable[[str], object], shard_ids: Iterable[str], max_workers: int) -> dict:
    """``ask`` of every shard, at most ``max_workers`` at a time, keyed by partition."""
    shard_ids = list(shard_ids)
    if not shard_ids:
        return {}
    with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(shard_ids)))) as pool:
        answers = list(pool.map(ask, shard_ids))
    return {partition_of(shard_id): answer for shard_id, answer in zip(shard_ids, answers)}
