"""The persist job on Kinesis: real boto3 against the loopback Kinesis, real Spark and Delta.

What must hold (issue 27, section 4): every record put lands exactly once in events, late or
quarantine (by shard and sequence number) when the stream is resharded between runs, when the
job is killed with SIGKILL mid-run and restarted, and when half the GetRecords calls are
throttled; a child shard is read only after its parents, and none of its records is routed late
for having waited. 56-digit sequence numbers are the unit tests' (test_kinesis_log.py,
test_planner_sparse_positions.py): the loopback's are small integers.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from unittest import mock

import pytest
import yaml

from connectors.persist_look import look_before_persist
from harness.kinesis_stream import (
    PutRecord,
    put_telemetry,
    python_workers_environment,
    read_lake,
    write_kinesis_stream_config,
)
from harness.persist_job import kill_after_batches, run_persist, start_persist
from tidemark.stream_config import load_stream

pytestmark = pytest.mark.integration

MINUTE_MS = 60_000
# Enough partition keys that every shard, children included, is written to.
DEVICES = [f"scooter-{n:02d}" for n in range(48)]


@pytest.fixture
def kinesis(loopback_kinesis, spark):
    """The loopback Kinesis, its identity reaching the Python workers of the session's Spark
    (where a job run in this process plans and reads) for the test."""
    with python_workers_environment(spark, loopback_kinesis.environment):
        yield loopback_kinesis


def _wave(first_ms: int, last_ms: int, count: int, offset: int = 0) -> list[tuple[str, int]]:
    """``count`` (device, event time) pairs rising evenly from ``first_ms`` to ``last_ms``: put in
    this order, each shard's event times rise too (no record is out of order in its shard)."""
    step = (last_ms - first_ms) // max(1, count - 1)
    return [(DEVICES[(offset + i) % len(DEVICES)], first_ms + i * step) for i in range(count)]


def _assert_every_record_once(put: list[PutRecord], lake) -> None:
    persisted = lake.persisted()
    expected = Counter(record.position for record in put)
    assert len(expected) == len(put), "Kinesis gave two records one sequence number"
    twice = sorted(position for position, n in persisted.items() if n > 1)
    missing = sorted(set(expected) - set(persisted))
    extra = sorted(set(persisted) - set(expected))
    assert not twice and not missing and not extra, f"twice {twice[:5]}, missing {missing[:5]}, unknown {extra[:5]}"


def _assert_ledger_accounts_for(put: list[PutRecord], lake) -> None:
    """Per shard, the ledger's ranges follow one another without gap or overlap (in batch order)
    and count exactly the records put to it."""
    per_shard = Counter(record.partition for record in put)
    for partition, count in per_shard.items():
        rows = sorted(lake.ledger_of(partition), key=lambda row: row["step_id"])
        assert rows, f"shard {partition} has no ledger row"
        gaps = [
            (a["end_offset"], b["start_offset"]) for a, b in zip(rows, rows[1:]) if a["end_offset"] != b["start_offset"]
        ]
        assert not gaps, f"shard {partition}: ledger ranges do not follow one another: {gaps}"
        routed = sum(row["records"] + row["quarantined"] + row["late"] for row in rows)
        read = sum(row["data_records"] for row in rows)
        assert (routed, read) == (count, count), f"shard {partition}: ledger routed {routed}, read {read}, put {count}"


def test_split_and_merge_between_runs_every_record_once_parents_before_children(kinesis, tmp_path):
    stream = "kpersist_reshard"
    kinesis.create_stream(stream, 4)
    client = kinesis.client()
    conf = write_kinesis_stream_config(tmp_path, kinesis.endpoint, stream, 4)
    env = kinesis.environment
    # Small batches: the second run plans several, so a child that did not wait for its parent
    # would be read beside the others and G would pass its parents' records.
    batch = ("--max-records-per-batch", "60")
    now_ms = int(time.time() * 1000)

    put = put_telemetry(client, stream, _wave(now_ms - 50 * MINUTE_MS, now_ms - 40 * MINUTE_MS, 160))
    run_persist(conf, *batch, log=tmp_path / "run1.log", environment=env)

    # Records the first run never saw, left in the shards about to close.
    put += put_telemetry(client, stream, _wave(now_ms - 38 * MINUTE_MS, now_ms - 33 * MINUTE_MS, 80, offset=5))
    shard_0 = client.list_shards(StreamName=stream)["Shards"][0]
    low, high = (int(shard_0["HashKeyRange"][key]) for key in ("StartingHashKey", "EndingHashKey"))
    client.split_shard(
        StreamName=stream, ShardToSplit="shardId-000000000000", NewStartingHashKey=str((low + high) // 2)
    )
    client.merge_shards(
        StreamName=stream, ShardToMerge="shardId-000000000002", AdjacentShardToMerge="shardId-000000000003"
    )
    listed = {int(s["ShardId"].removeprefix("shardId-")): s for s in client.list_shards(StreamName=stream)["Shards"]}
    parents_of = {
        p: {int(s[k].removeprefix("shardId-")) for k in ("ParentShardId", "AdjacentParentShardId") if s.get(k)}
        for p, s in listed.items()
    }
    assert {p: parents for p, parents in parents_of.items() if parents} == {4: {0}, 5: {0}, 6: {2, 3}}
    # The children's records span 29 minutes, more than the allowed lateness (10 m) past the
    # parents' last records: if a child's records met a G its parents or shard 1 had moved on,
    # they would be late.
    children_put = put_telemetry(client, stream, _wave(now_ms - 30 * MINUTE_MS, now_ms - MINUTE_MS, 240, offset=11))
    put += children_put
    by_shard = Counter(record.partition for record in put)
    assert {0, 1, 2, 3, 4, 5, 6} == set(by_shard), f"a shard got no record: {by_shard}"
    assert {record.partition for record in children_put} == {1, 4, 5, 6}, "closed shards take no records"

    run_persist(conf, *batch, log=tmp_path / "run2.log", environment=env)

    lake = read_lake(tmp_path)
    _assert_every_record_once(put, lake)
    assert len(lake.rows["events"]) == len(put), "all records are good and on time: all in events"
    assert lake.rows["late"] == [], "no record late: each is within the allowed lateness of the one before it"
    _assert_ledger_accounts_for(put, lake)

    def by_step(partition: int) -> list[dict]:
        return sorted(lake.ledger_of(partition), key=lambda row: row["step_id"])

    for parent in (0, 2, 3):
        assert by_step(parent)[-1]["partition_status"] == "FINISHED", f"parent {parent} ends FINISHED"
    for child, parents in ((4, {0}), (5, {0}), (6, {2, 3})):
        first = next(row for row in by_step(child) if row["end_offset"] > row["start_offset"])
        for parent in parents:
            last = [row for row in by_step(parent) if row["end_offset"] > row["start_offset"]][-1]
            assert first["step_id"] > last["step_id"], (
                f"child {child} first read in step {first['step_id']}, parent {parent} last read in step {last['step_id']}"
            )
            assert first["read_time"] >= last["read_time"]

    # The Spark-free look before a scheduled run (connectors.persist_look). The children are
    # ACTIVE and Kinesis tells no shard's last arrival: they may turn IDLE now, so the job runs.
    with mock.patch.dict(os.environ, env):
        assert "may turn IDLE" in look_before_persist(load_stream(conf, "telemetry")).reason
        # With a short idle timeout a run marks every open shard IDLE; then nothing is new, the
        # closed parents (FINISHED) included, until one record arrives.
        settings = yaml.safe_load(conf.read_text())
        settings["streams"]["telemetry"]["event_time"]["idle_timeout"] = "1s"
        quick = tmp_path / "streams_idle.yaml"
        quick.write_text(yaml.safe_dump(settings))
        time.sleep(1.0)
        run_persist(quick, log=tmp_path / "run3.log", environment=env)
        idle = load_stream(quick, "telemetry")
        assert look_before_persist(idle).nothing_new, look_before_persist(idle).reason
        put_telemetry(client, stream, [(DEVICES[0], now_ms)])
        assert not look_before_persist(idle).nothing_new


def test_sigkill_mid_run_then_restart_loses_and_duplicates_nothing(kinesis, tmp_path):
    stream = "kpersist_sigkill"
    kinesis.create_stream(stream, 4)
    client = kinesis.client()
    conf = write_kinesis_stream_config(tmp_path, kinesis.endpoint, stream, 4)
    env = kinesis.environment
    now_ms = int(time.time() * 1000)
    put = put_telemetry(client, stream, _wave(now_ms - 40 * MINUTE_MS, now_ms - 5 * MINUTE_MS, 800))

    job = start_persist(
        conf, "--mode", "available_now", "--max-records-per-batch", "100", log=tmp_path / "killed.log", environment=env
    )
    kill_after_batches(job, tmp_path / "lake" / "telemetry" / "ledger", batches=1)
    before_restart = read_lake(tmp_path).persisted()
    assert 0 < sum(before_restart.values()) < len(put), "the kill landed after a batch, before the last"

    put += put_telemetry(client, stream, _wave(now_ms - 4 * MINUTE_MS, now_ms - MINUTE_MS, 100, offset=3))
    run_persist(conf, "--max-records-per-batch", "200", log=tmp_path / "restart.log", environment=env)

    lake = read_lake(tmp_path)
    _assert_every_record_once(put, lake)
    assert lake.rows["late"] == [] and lake.rows["quarantine"] == []
    _assert_ledger_accounts_for(put, lake)


def test_half_the_get_records_calls_throttled_loses_nothing_and_counts_them(kinesis, spark, tmp_path):
    stream = "kpersist_throttle"
    kinesis.create_stream(stream, 2)
    client = kinesis.client()
    conf = write_kinesis_stream_config(tmp_path, kinesis.endpoint, stream, 2)
    now_ms = int(time.time() * 1000)
    put = put_telemetry(client, stream, _wave(now_ms - 20 * MINUTE_MS, now_ms - MINUTE_MS, 300))

    run_persist(
        conf,
        "--max-records-per-batch",
        "100",
        log=tmp_path / "throttled.log",
        environment={**kinesis.environment, "TIDEMARK_CHAOS_THROTTLE": "telemetry:0.5"},
    )

    lake = read_lake(tmp_path)
    _assert_every_record_once(put, lake)
    assert lake.rows["late"] == [] and lake.rows["quarantine"] == []
    _assert_ledger_accounts_for(put, lake)
    # The job says how many calls Kinesis throttled (backed off, never failed), in its last line.
    text = (tmp_path / "throttled.log").read_text()
    finished = [json.loads(line[line.index("{") :]) for line in text.splitlines() if '"query_finished"' in line]
    assert finished and finished[-1]["throttled_calls"] > 0, finished


def test_a_missing_stream_or_a_silent_endpoint_stops_the_job_before_spark_naming_it(loopback_kinesis, tmp_path):
    from harness.persist_job import run_in_process
    from spark_jobs.persist.job import main
    from stack.ports import free_port

    cases = {
        "missing": (loopback_kinesis.endpoint, "no-such-stream", "'no-such-stream'"),
        "silent": (f"http://127.0.0.1:{free_port()}", "telemetry", "did not answer ListShards for stream 'telemetry'"),
    }
    for case, (endpoint, stream, named) in cases.items():
        folder = tmp_path / case
        folder.mkdir()
        conf = write_kinesis_stream_config(folder, endpoint, stream, 2)
        log = folder / "job.log"
        started = time.monotonic()
        code = run_in_process(main, ["--stream", "telemetry", "--conf", str(conf)], log, loopback_kinesis.environment)
        text = log.read_text()
        assert code == 2, text[-3000:]
        assert named in text and endpoint in text, text[-3000:]
        assert "tidemark-persist" not in text, "Spark started for a stream it cannot read"
        assert time.monotonic() - started < 30
        assert not (folder / "lake").exists(), "nothing written"
