"""Shared pieces of the Kinesis persist tests: a stream config on the loopback Kinesis, telemetry
records put with real PutRecords calls, and what the lake holds of them.

Positions are compared as integers: the lake keeps a sequence number as an ordered text key
(zero-padded), PutRecords answers with the bare decimal; ``int`` makes both the same number
without asking the code under test how it formats them.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from harness.persist_job import REPO, telemetry_value

# PutRecords takes at most 500 records per call.
_PUT_BATCH = 500
_PUT_ATTEMPTS = 8
# The tables a record can land in: every record put is in exactly one of them.
RECORD_TABLES = ("events", "late", "quarantine")


@contextlib.contextmanager
def python_workers_environment(spark, environment: Mapping[str, str]) -> Iterator[None]:
    """``environment`` in the environment of the Python workers ``spark`` starts for the block:
    a job run in this process (``harness.persist_job.run_in_process``) plans and reads Kinesis in
    Python workers the session's JVM starts, and that JVM's own environment was fixed before the
    loopback Kinesis existed. PySpark hands ``SparkContext.environment`` to every Python function
    it wraps (the data source registered at the job's start among them), so the keys reach the
    job's workers as spark-submit's environment reaches them in production."""
    workers = spark.sparkContext.environment
    saved = {name: workers.get(name) for name in environment}
    workers.update(environment)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                workers.pop(name, None)
            else:
                workers[name] = value


def write_kinesis_stream_config(tmp_path: Path, endpoint: str, stream: str, shards: int, **persist) -> Path:
    """A streams.yaml for one test: the shipped telemetry stream reading Kinesis stream ``stream``
    (region us-east-1, at ``endpoint``), its lake and checkpoints under ``tmp_path``; ``persist``
    overrides keys of its persist section."""
    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    telemetry = document["streams"]["telemetry"]
    telemetry["source"] = {
        "kind": "kinesis",
        "stream": stream,
        "region": "us-east-1",
        "endpoint": endpoint,
        "shards": shards,
    }
    telemetry["lake"] = {"root": str(tmp_path / "lake"), "checkpoint_root": str(tmp_path / "checkpoints")}
    telemetry["persist"].update(persist)
    document["streams"] = {"telemetry": telemetry}
    path = tmp_path / "streams.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


@dataclass(frozen=True)
class PutRecord:
    """A record Kinesis accepted: the shard's partition number, its sequence number, what it holds."""

    partition: int
    sequence: int
    device: str
    event_time_ms: int

    @property
    def position(self) -> tuple[int, int]:
        return self.partition, self.sequence


def put_telemetry(client, stream: str, records: Sequence[tuple[str, int]]) -> list[PutRecord]:
    """Put (device id, event time in ms) telemetry records, in order, partition key = device id,
    at most 500 per PutRecords call; a record the call reports failed is sent again (with backoff)
    until it is accepted. Returns every record as Kinesis accepted it."""
    return _put_entries(client, stream, [(device, at_ms, None) for device, at_ms in records])


def shard_hash_keys(client, stream: str) -> dict[int, str]:
    """Each open shard's partition number → its StartingHashKey: an ExplicitHashKey that lands a
    record in that shard whatever its partition key."""
    shards, token = [], None
    while True:
        page = client.list_shards(NextToken=token) if token else client.list_shards(StreamName=stream)
        shards += page["Shards"]
        token = page.get("NextToken")
        if not token:
            break
    return {
        int(shard["ShardId"].removeprefix("shardId-")): shard["HashKeyRange"]["StartingHashKey"]
        for shard in shards
        if "EndingSequenceNumber" not in shard["SequenceNumberRange"]
    }


def put_telemetry_on_shards(client, stream: str, records: Sequence[tuple[int, str, int]]) -> list[PutRecord]:
    """Put (shard's partition number, device id, event time in ms) telemetry records, in order,
    each pinned to its shard by ExplicitHashKey = the shard's StartingHashKey (the partition key,
    the device id, then decides nothing); retried as ``put_telemetry`` retries. Fails the test
    when a record lands in another shard than asked. Returns every record as Kinesis accepted it."""
    hash_keys = shard_hash_keys(client, stream)
    unknown = sorted({partition for partition, _, _ in records} - set(hash_keys))
    assert not unknown, f"{stream!r} has no open shard {unknown}; it has {sorted(hash_keys)}"
    put = _put_entries(client, stream, [(device, at_ms, hash_keys[partition]) for partition, device, at_ms in records])
    landed = Counter(r.partition for r in put)
    asked = Counter(partition for partition, _, _ in records)
    assert landed == asked, f"records landed in shards {dict(landed)}, asked for {dict(asked)}"
    return put


def _put_entries(client, stream: str, entries: Sequence[tuple[str, int, str | None]]) -> list[PutRecord]:
    """(device id, event time in ms, ExplicitHashKey or None) entries put in order, 500 a call,
    the refused ones sent again with backoff until Kinesis accepts them."""
    put: list[PutRecord] = []
    for first in range(0, len(entries), _PUT_BATCH):
        pending = list(entries[first : first + _PUT_BATCH])
        for attempt in range(_PUT_ATTEMPTS):
            answer = client.put_records(StreamName=stream, Records=[_entry(*entry) for entry in pending])
            failed = []
            for entry, result in zip(pending, answer["Records"]):
                if "ErrorCode" in result:
                    failed.append(entry)
                else:
                    partition = int(result["ShardId"].removeprefix("shardId-"))
                    put.append(PutRecord(partition, int(result["SequenceNumber"]), entry[0], entry[1]))
            if not failed:
                break
            pending = failed
            time.sleep(0.05 * 2**attempt)
        else:
            raise AssertionError(f"{len(pending)} records were still refused by {stream!r} after {_PUT_ATTEMPTS} tries")
    return put


def _entry(device: str, at_ms: int, hash_key: str | None) -> dict:
    entry = {"Data": telemetry_value(device, at_ms), "PartitionKey": device}
    if hash_key is not None:
        entry["ExplicitHashKey"] = hash_key
    return entry


@dataclass(frozen=True)
class LakeContents:
    """What a stream's lake holds: per record table the (source_partition, sequence) of every
    row, and the ledger's rows (offsets as integers) ordered by partition and start."""

    rows: dict[str, list[tuple[int, int]]]
    ledger: list[dict]

    def persisted(self) -> Counter:
        """How many times each (partition, sequence) is in events, late and quarantine together."""
        return Counter(position for table in RECORD_TABLES for position in self.rows[table])

    def ledger_of(self, partition: int) -> list[dict]:
        return [row for row in self.ledger if row["source_partition"] == partition]


def read_lake(tmp_path: Path, stream: str = "telemetry") -> LakeContents:
    """The record tables and the ledger of ``stream`` in the lake under ``tmp_path`` (as
    ``write_kinesis_stream_config`` places it); a table not created yet holds nothing."""
    from deltalake import DeltaTable

    root = tmp_path / "lake" / stream

    def table(name: str) -> list[dict]:
        path = root / name
        if not (path / "_delta_log").exists():
            return []
        return DeltaTable(str(path)).to_pyarrow_table().to_pylist()

    rows = {
        name: [(row["source_partition"], int(row["source_offset"])) for row in table(name)] for name in RECORD_TABLES
    }
    ledger = [
        {**row, "start_offset": int(row["start_offset"]), "end_offset": int(row["end_offset"])}
        for row in table("ledger")
    ]
    ledger.sort(key=lambda row: (row["source_partition"], row["start_offset"], row["end_offset"], row["step_id"]))
    return LakeContents(rows, ledger)
