"""A Kinesis stream in memory for the Kinesis log's unit tests, answering like the real service.

Real-shaped sequence numbers (56 decimal digits, sparse: successive records of a shard are far
apart), a closed shard read to its end returns no NextShardIterator, iterators expire five
minutes after they are returned, ListShards refuses StreamName together with NextToken. Faults
are switched on by the test: throttling, empty pages while behind, an expired iterator, an error
code for an operation, an endpoint that does not answer. Every call is recorded.
"""

from __future__ import annotations

import datetime as dt
import itertools
from dataclasses import dataclass, field

from botocore.exceptions import ClientError, EndpointConnectionError

# A real sequence number (56 digits); shards start far apart, records follow sparsely.
BASE_SEQUENCE = 49590338271490256608559692538361571095921575989136588898
SHARD_SPACING = 10**30
RECORD_SPACING = 10**21 + 4_177  # sparse and irregular in the low digits


class SecondsClock:
    """Seconds since the epoch, moved by the test or by the code's sleep()."""

    def __init__(self, now_s: float):
        self.now_s = now_s
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now_s

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now_s += seconds


@dataclass
class FakeShard:
    shard_id: str
    starting: int
    parent: str | None = None
    adjacent_parent: str | None = None
    ending: int | None = None
    records: list[tuple[int, int, bytes, str]] = field(default_factory=list)  # (sequence, arrival ms, data, key)
    next_sequence: int = 0
    trimmed: int = 0  # records before this index expired

    def retained(self):
        return self.records[self.trimmed :]


def _error(code: str, operation: str, message: str = "") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message or code}}, operation)


class FakeKinesis:
    """The boto3 client methods KinesisLog and read_range call, on one stream."""

    def __init__(self, stream: str, clock: SecondsClock, list_page_size: int = 100, retention_hours: int = 24):
        self.stream = stream
        self.clock = clock
        self.list_page_size = list_page_size
        self.retention_hours = retention_hours
        self.created_s = clock()
        self.shards: dict[str, FakeShard] = {}
        self.calls: list[tuple] = []
        self.throttle: dict[str, int] = {}  # shard id -> GetRecords calls still to refuse
        self.behind_pages: dict[str, int] = {}  # shard id -> empty pages (MillisBehindLatest > 0) still to give
        self.expire_next: set[str] = set()  # shard ids whose next GetRecords says the iterator expired
        self.fail: dict[str, str] = {}  # operation -> error code to answer
        self.unreachable = False
        self.moto_style_closed = False  # True: keep NextShardIterator on closed shards, as moto does
        self._iterators: dict[str, tuple[str, int, float]] = {}  # token -> (shard id, first sequence >=, issued)
        self._tokens = itertools.count()

    # -- the test's side -------------------------------------------------------------------------

    def add_shard(self, number: int, parent: int | None = None, adjacent_parent: int | None = None) -> FakeShard:
        shard_id = f"shardId-{number:012d}"
        starting = BASE_SEQUENCE + number * SHARD_SPACING
        shard = FakeShard(
            shard_id,
            starting,
            None if parent is None else f"shardId-{parent:012d}",
            None if adjacent_parent is None else f"shardId-{adjacent_parent:012d}",
            next_sequence=starting + 7,  # the first record is past the starting sequence, as in Kinesis
        )
        self.shards[shard_id] = shard
        return shard

    def put(self, number: int, *arrivals_ms: int) -> list[int]:
        shard = self.shards[f"shardId-{number:012d}"]
        assert shard.ending is None, "a closed shard takes no records"
        sequences = []
        for arrival in arrivals_ms:
            sequence = shard.next_sequence
            shard.records.append((sequence, arrival, f"{number}:{len(shard.records)}".encode(), f"key-{number}"))
            shard.next_sequence += RECORD_SPACING + len(shard.records)
            sequences.append(sequence)
        return sequences

    def close(self, number: int) -> None:
        shard = self.shards[f"shardId-{number:012d}"]
        shard.ending = shard.next_sequence - 1

    def split(self, number: int, first_child: int) -> None:
        self.close(number)
        self.add_shard(first_child, parent=number)
        self.add_shard(first_child + 1, parent=number)

    def merge(self, number: int, adjacent: int, child: int) -> None:
        self.close(number)
        self.close(adjacent)
        self.add_shard(child, parent=number, adjacent_parent=adjacent)

    def remove(self, number: int) -> None:
        """The shard expired whole: ListShards no longer names it."""
        del self.shards[f"shardId-{number:012d}"]

    def get_records_calls(self, shard_id: str | None = None) -> int:
        return sum(1 for call in self.calls if call[0] == "GetRecords" and (shard_id is None or call[1] == shard_id))

    # -- the API ------------------------------------------------------------------------------------

    def _enter(self, operation: str, *details) -> None:
        self.calls.append((operation, *details))
        if self.unreachable:
            raise EndpointConnectionError(endpoint_url="http://127.0.0.1:9")
        if operation in self.fail:
            raise _error(self.fail[operation], operation, f"{self.fail[operation]} (injected)")

    def list_shards(self, StreamName=None, NextToken=None, MaxResults=1000):
        self._enter("ListShards", StreamName, NextToken)
        if StreamName is not None and NextToken is not None:
            raise _error(
                "InvalidArgumentException", "ListShards", "NextToken and StreamName cannot be provided together"
            )
        if NextToken is None and StreamName != self.stream:
            raise _error("ResourceNotFoundException", "ListShards", f"Stream {StreamName} under account 1 not found.")
        start = 0 if NextToken is None else int(NextToken)
        size = min(MaxResults, self.list_page_size)
        listed = sorted(self.shards.values(), key=lambda s: s.shard_id)
        page = listed[start : start + size]
        answer = {"Shards": [self._describe(shard) for shard in page]}
        if start + size < len(listed):
            answer["NextToken"] = str(start + size)
        return answer

    @staticmethod
    def _describe(shard: FakeShard) -> dict:
        sequence_range = {"StartingSequenceNumber": str(shard.starting)}
        if shard.ending is not None:
            sequence_range["EndingSequenceNumber"] = str(shard.ending)
        described = {"ShardId": shard.shard_id, "SequenceNumberRange": sequence_range}
        if shard.parent:
            described["ParentShardId"] = shard.parent
        if shard.adjacent_parent:
            described["AdjacentParentShardId"] = shard.adjacent_parent
        return described

    def describe_stream_summary(self, StreamName):
        self._enter("DescribeStreamSummary", StreamName)
        if StreamName != self.stream:
            raise _error("ResourceNotFoundException", "DescribeStreamSummary", f"Stream {StreamName} not found.")
        return {
            "StreamDescriptionSummary": {
                "StreamName": self.stream,
                "RetentionPeriodHours": self.retention_hours,
                "StreamCreationTimestamp": dt.datetime.fromtimestamp(self.created_s, dt.UTC),
            }
        }

    def get_shard_iterator(self, StreamName, ShardId, ShardIteratorType, StartingSequenceNumber=None, Timestamp=None):
        self._enter("GetShardIterator", ShardId, ShardIteratorType, StartingSequenceNumber)
        if StreamName != self.stream:
            raise _error("ResourceNotFoundException", "GetShardIterator", f"Stream {StreamName} not found.")
        shard = self.shards.get(ShardId)
        if shard is None:
            raise _error("ResourceNotFoundException", "GetShardIterator", f"Shard {ShardId} does not exist")
        if ShardIteratorType == "TRIM_HORIZON":
            first = 0
        elif ShardIteratorType == "AT_SEQUENCE_NUMBER":
            first = int(StartingSequenceNumber)
        elif ShardIteratorType == "AFTER_SEQUENCE_NUMBER":
            first = int(StartingSequenceNumber) + 1
        elif ShardIteratorType == "AT_TIMESTAMP":
            # The first retained record that arrived at or after the time, past the last when none did.
            at_ms = round(Timestamp.timestamp() * 1000)
            first = next((seq for seq, arrival, _, _ in shard.retained() if arrival >= at_ms), shard.next_sequence)
        else:
            raise _error("InvalidArgumentException", "GetShardIterator", ShardIteratorType)
        if StartingSequenceNumber is not None and int(StartingSequenceNumber) < shard.starting:
            raise _error("InvalidArgumentException", "GetShardIterator", "sequence number not of this shard")
        return {"ShardIterator": self._issue(ShardId, first)}

    def _issue(self, shard_id: str, first: int) -> str:
        token = f"iterator-{next(self._tokens)}"
        self._iterators[token] = (shard_id, first, self.clock())
        return token

    def get_records(self, ShardIterator, Limit=10_000):
        shard_id, first, issued = self._iterators[ShardIterator]
        self._enter("GetRecords", shard_id, first)
        if self.throttle.get(shard_id):
            self.throttle[shard_id] -= 1
            raise _error("ProvisionedThroughputExceededException", "GetRecords", "Rate exceeded for shard")
        if shard_id in self.expire_next or self.clock() - issued > 300:
            self.expire_next.discard(shard_id)
            raise _error("ExpiredIteratorException", "GetRecords", "Iterator expired")
        shard = self.shards.get(shard_id)
        if shard is None:
            raise _error("ResourceNotFoundException", "GetRecords", f"Shard {shard_id} does not exist")
        retained = shard.retained()
        unread = [record for record in retained if record[0] >= first]
        if self.behind_pages.get(shard_id) and unread:
            self.behind_pages[shard_id] -= 1
            return {"Records": [], "NextShardIterator": self._issue(shard_id, first), "MillisBehindLatest": 5_000}
        page = unread[:Limit]
        rest = unread[len(page) :]
        latest = retained[-1][1] if retained else 0
        behind = 0 if not rest else max(1, latest - page[-1][1])
        answer = {
            "Records": [
                {
                    "SequenceNumber": str(sequence),
                    "ApproximateArrivalTimestamp": dt.datetime.fromtimestamp(arrival / 1000, dt.UTC),
                    "Data": data,
                    "PartitionKey": key,
                }
                for sequence, arrival, data, key in page
            ],
            "MillisBehindLatest": behind,
        }
        following = page[-1][0] + 1 if page else first
        if shard.ending is None or rest or self.moto_style_closed:
            answer["NextShardIterator"] = self._issue(shard_id, following)
        return answer
