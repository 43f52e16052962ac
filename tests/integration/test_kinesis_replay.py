"""Recovery by sequence ranges and backfill by AT_TIMESTAMP on a Kinesis stream: real boto3 against
the loopback Kinesis, real Spark and Delta (issue 27, "the loop on Kinesis").

One stream of 4 shards is put in two waves a moment apart and persisted once. Then, as the daily
reconciliation does: a shard's rows of one event hour are deleted from events; a backfill of the
second wave's arrival window into a shadow set finds exactly that sequence range missing in live;
recovery replays that range; every record put is in the lake exactly once again, and the shadow
set equals live. Expected ranges come from the sequence numbers PutRecords answered, never from
the code under test. The sparse-island rule on 56-digit sequence numbers (the loopback's are
small, dense per shard) is checked on a frame of real-shaped keys.
"""

from __future__ import annotations

import json
import time
from collections import Counter

import pytest

from harness.kinesis_stream import put_telemetry, python_workers_environment, read_lake, write_kinesis_stream_config
from harness.persist_job import run_in_process, run_persist

pytestmark = pytest.mark.integration

MINUTE_MS = 60_000
HOUR_MS = 60 * MINUTE_MS
DEVICES = [f"scooter-{n:02d}" for n in range(32)]
STREAM = "kreplay"


def _wave(first_ms: int, last_ms: int, count: int) -> list[tuple[str, int]]:
    """``count`` (device, event time) pairs rising evenly from ``first_ms`` to ``last_ms``: put in
    this order, each shard's event times rise with its sequence numbers."""
    step = (last_ms - first_ms) // (count - 1)
    return [(DEVICES[i % len(DEVICES)], first_ms + i * step) for i in range(count)]


@pytest.fixture(scope="module")
def persisted(loopback_kinesis, spark, tmp_path_factory):
    """The stream, put and persisted; the loopback's identity reaches the session's Python
    workers (where the jobs run in this process plan and read) for the module's tests."""
    with python_workers_environment(spark, loopback_kinesis.environment):
        yield _persisted(loopback_kinesis, tmp_path_factory)


def _persisted(loopback_kinesis, tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("kinesis-replay")
    loopback_kinesis.create_stream(STREAM, 4)
    client = loopback_kinesis.client()
    conf = write_kinesis_stream_config(folder, loopback_kinesis.endpoint, STREAM, 4)
    now_ms = int(time.time() * 1000)
    hour = now_ms - now_ms % HOUR_MS - 2 * HOUR_MS  # a whole event hour two hours back
    first = put_telemetry(client, STREAM, _wave(hour - 50 * MINUTE_MS, hour - 10 * MINUTE_MS, 80))
    run_persist(conf, log=folder / "persist-1.log", environment=loopback_kinesis.environment)
    # The second wave arrives after the first run (the backfill's window is by arrival time) and
    # is persisted by a second run, under the G the first one left (live's ledger rows say so).
    second_arrives_ms = int(time.time() * 1000)
    second = put_telemetry(client, STREAM, _wave(hour, hour + HOUR_MS - MINUTE_MS, 120))
    window_end_ms = int(time.time() * 1000) + 1
    run_persist(conf, log=folder / "persist-2.log", environment=loopback_kinesis.environment)
    lake = read_lake(folder)
    assert sorted(lake.rows["events"]) == sorted(r.position for r in first + second), "every record in events"
    return {
        "folder": folder,
        "conf": conf,
        "env": loopback_kinesis.environment,
        "hour": hour,
        "first": first,
        "second": second,
        "window": (second_arrives_ms, window_end_ms),
    }


def test_a_hole_of_one_shard_hour_is_found_by_an_arrival_time_backfill_and_recovered_by_its_sequence_range(
    persisted, spark
):
    from delta.tables import DeltaTable

    from spark_jobs.replay.backfill import main as backfill_main
    from spark_jobs.replay.recover import main as recover_main
    from spark_jobs.replay.shadow_comparison import compare_with_live
    from tidemark.backfill_request import BackfillRequest
    from tidemark.offset_coverage import OffsetRange
    from tidemark.recovery_request import RecoveryRequest
    from tidemark.stream_config import load_stream

    folder, hour, second = persisted["folder"], persisted["hour"], persisted["second"]
    stream = load_stream(persisted["conf"], "telemetry")
    by_shard = Counter(r.partition for r in second)
    shard = max(by_shard, key=lambda p: (by_shard[p], -p))
    deleted = sorted(r.sequence for r in second if r.partition == shard and hour <= r.event_time_ms < hour + HOUR_MS)
    assert len(deleted) == by_shard[shard] >= 20, "the shard's whole second wave lies in the hour"
    DeltaTable.forPath(spark, stream.table_path("events")).delete(
        f"source_partition = {shard} AND event_time >= timestamp_millis({hour}) "
        f"AND event_time < timestamp_millis({hour + HOUR_MS})"
    )
    assert len(read_lake(folder).rows["events"]) == len(persisted["first"]) + len(second) - len(deleted)

    # The backfill of the second wave's arrival window, every shard the stream lists, into a shadow set.
    start_ms, end_ms = persisted["window"]
    request = BackfillRequest("telemetry", start_ms, end_ms, (), shadow="arrivals", compare=True)
    code = run_in_process(
        backfill_main,
        ["--conf", str(persisted["conf"]), "--request", request.encode(), "--result", str(folder / "backfill.json")],
        folder / "backfill.log",
        persisted["env"],
    )
    result = json.loads((folder / "backfill.json").read_text())
    assert code == 0, result
    assert result["window_by"].startswith("arrival time"), "a Kinesis window is said to be by arrival"
    assert result["partitions"] == [0, 1, 2, 3]
    expected_ranges = {
        str(p): [
            min(r.sequence for r in second if r.partition == p),
            max(r.sequence for r in second if r.partition == p) + 1,
        ]
        for p in by_shard
    }
    assert result["ranges"] == expected_ranges, "from each shard's first second-wave record to its tip"
    assert (result["records"], result["late"], result["quarantined"], result["lost"]) == (len(second), 0, 0, [])
    comparison = result["comparison"]
    assert [(d["partition"], d["missing_in_live"], d["live"], d["shadow"]) for d in comparison["differing"]] == [
        (shard, len(deleted), 0, len(deleted))
    ]
    (asked,) = comparison["recovery_requests"]
    assert (asked["partition"], asked["ranges"]) == (shard, [{"start": deleted[0], "end": deleted[-1] + 1}])

    # Recovery replays that sequence range, as the backfill DAG triggers it.
    code = run_in_process(
        recover_main,
        [
            "--conf",
            str(persisted["conf"]),
            "--request",
            RecoveryRequest.from_json(asked).encode(),
            "--result",
            str(folder / "recovered.json"),
        ],
        folder / "recover.log",
        persisted["env"],
    )
    recovered = json.loads((folder / "recovered.json").read_text())
    assert code == 0, recovered
    assert (recovered["inserted"], recovered["lost"]) == (len(deleted), [])
    lake = read_lake(folder)
    assert Counter(lake.rows["events"]) == Counter(r.position for r in persisted["first"] + second), "each once"
    recovery_rows = [row for row in lake.ledger_of(shard) if row["mode"] == "recovery"]
    assert recovery_rows and recovery_rows[0]["start_offset"] == deleted[0]
    assert recovery_rows[-1]["end_offset"] <= deleted[-1] + 1

    # Records the live job's first batch persisted (planned before any G existed) are recovered
    # into events, where live had them: not routed under live's latest G into late.
    first = persisted["first"]
    first_shard = max({r.partition for r in first}, key=lambda p: sum(r.partition == p for r in first))
    gone = sorted(r.sequence for r in first if r.partition == first_shard)
    DeltaTable.forPath(spark, stream.table_path("events")).delete(
        f"source_partition = {first_shard} AND event_time < timestamp_millis({hour})"
    )
    code = run_in_process(
        recover_main,
        [
            "--conf",
            str(persisted["conf"]),
            "--request",
            RecoveryRequest("telemetry", first_shard, (OffsetRange(gone[0], gone[-1] + 1),), "test").encode(),
            "--result",
            str(folder / "recovered-first.json"),
        ],
        folder / "recover-first.log",
        persisted["env"],
    )
    assert code == 0, (folder / "recover-first.log").read_text()[-3000:]
    lake = read_lake(folder)
    assert lake.rows["late"] == [], "a first-batch record recovered into late"
    assert Counter(lake.rows["events"]) == Counter(r.position for r in persisted["first"] + second), "each once"

    # The shadow set now equals live over the backfill's ranges.
    again = compare_with_live(spark, stream, "arrivals", {int(p): tuple(r) for p, r in expected_ranges.items()})
    assert again.differing == [] and again.missing_in_live == {}
    assert sum(h.live for h in again.hours) == sum(h.shadow for h in again.hours) == len(second)


def test_a_recovery_of_a_shard_the_stream_does_not_list_is_refused_naming_it(persisted):
    from spark_jobs.replay.recover import main as recover_main
    from tidemark.offset_coverage import OffsetRange
    from tidemark.recovery_request import RecoveryRequest

    folder = persisted["folder"]
    request = RecoveryRequest("telemetry", 9, (OffsetRange(1, 5),), "test")
    code = run_in_process(
        recover_main,
        ["--conf", str(persisted["conf"]), "--request", request.encode()],
        folder / "refused.log",
        persisted["env"],
    )
    assert code == 2
    assert (
        f"recover: param 'partition': Kinesis stream '{STREAM}' lists no shard shardId-000000000009 (partition 9)"
        in (folder / "refused.log").read_text()
    )


def test_missing_sequence_numbers_become_ranges_by_rank_among_the_shadow_rows(spark, tmp_path):
    """Sparse 56-digit sequence numbers: rows missing in live, consecutive among the shadow's own
    rows, are one range [first, last + 1); a row live holds between them splits the range."""
    from pyspark.sql import functions as F

    from spark_jobs.replay.shadow_comparison import missing_position_ranges
    from tidemark.log_position import KINESIS_SEQUENCE_NUMBERS, position_key
    from tidemark.offset_coverage import OffsetRange

    base = 49590338271490256608559692538361571095921575989136588898
    sequences = [base + n * (10**21 + 4_177 * n) for n in range(8)]
    in_live = {0, 3, 6}  # the shadow holds all eight; live lacks 1, 2, 4, 5 and 7
    rows = [(1, position_key(s), None if n not in in_live else 1, 1) for n, s in enumerate(sequences)]
    rows.append((2, position_key(base), None, 1))  # another shard: its own ranks
    joined = spark.createDataFrame(
        rows, "source_partition INT, source_offset STRING, live_hour BIGINT, shadow_hour BIGINT"
    ).withColumn("in_live_elsewhere", F.lit(None).cast("boolean"))
    missing = F.col("live_hour").isNull() & F.col("in_live_elsewhere").isNull()
    ranges = missing_position_ranges(joined, missing, KINESIS_SEQUENCE_NUMBERS)
    assert ranges == {
        1: [
            OffsetRange(sequences[1], sequences[2] + 1),
            OffsetRange(sequences[4], sequences[5] + 1),
            OffsetRange(sequences[7], sequences[7] + 1),
        ],
        2: [OffsetRange(base, base + 1)],
    }
