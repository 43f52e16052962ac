"""The quality run, and the overview behind ``tidemark status`` and the watermark page, on a
Kinesis stream's lake: real boto3 against the loopback Kinesis, the persist job run in this
process, real Spark, Delta and Great Expectations.

One lake, written once: a complete sealed hour is OK on every shard; rows deleted from it are a
HOLE naming the ledger's sequence range (which of its sequence numbers held the missing records
only the log knows); records put after the job's last run, judged a stall timeout later, make
their shard STOP (the job is silent) and the others OK; the overview shows every shard, unread
or caught up. Expected values come from the records put and the lake's own rows, never from
subtracting sequence numbers.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest
import yaml

from connectors.lake_reader import read_stream_overview
from expectations import quality_run
from expectations.delta_lake_facts import DeltaLakeFacts
from expectations.lake_facts import SparkLakeFacts
from expectations.ledger_entries import read_ledger
from expectations.quality_run import run_quality
from expectations.quality_status import QualityStatus
from harness.kinesis_stream import put_telemetry, python_workers_environment, read_lake, write_kinesis_stream_config
from harness.persist_job import run_persist
from tidemark.log_position import KINESIS_SEQUENCE_NUMBERS, position_key
from tidemark.offset_coverage import OffsetRange, merge_ranges
from tidemark.stream_config import load_stream

pytestmark = pytest.mark.integration

MINUTE_MS = 60_000
HOUR_MS = 60 * MINUTE_MS
DEVICES = [f"scooter-{n:02d}" for n in range(24)]
QUALITY = {"stall_window": 3, "stall_timeout": "30m", "max_partition_lag": "1h", "history_hours": 2}


def _config(tmp_path, endpoint: str, name: str):
    path = write_kinesis_stream_config(tmp_path, endpoint, name, 2)
    document = yaml.safe_load(path.read_text())
    document["streams"]["telemetry"].setdefault("quality", {}).update(QUALITY)
    path.write_text(yaml.safe_dump(document))
    return path


def _check(spark, stream, hours, now_ms, tmp_path, run_name):
    ledger = read_ledger(spark.read.format("delta").load(stream.table_path("ledger")))
    bounds = quality_run.read_log_bounds(stream, ledger)
    lake = DeltaLakeFacts(stream)
    result = run_quality(lake, stream, hours, bounds, now_ms, tmp_path / "reports", tmp_path / "gx", run_name=run_name)
    return result, {p.partition: p for p in result.partitions}


def _facts_of_both_readers(spark, stream, hour):
    """Every fact the run asks for, from the Spark-free reader and from Spark, on sequence numbers."""
    answers = []
    for lake in (DeltaLakeFacts(stream), SparkLakeFacts(spark, stream)):
        ledger = lake.ledger()
        ranges = {(e.partition, e.start): (e.partition, OffsetRange(e.start, e.end)) for e in ledger if e.end > e.start}
        scopes = {
            p: (p, merge_ranges(r for q, r in ranges.values() if q == p)) for p in {q for q, _ in ranges.values()}
        }
        bounds = {p: OffsetRange(spans[0].start, spans[-1].end) for p, (_, spans) in scopes.items()}
        offsets = lake.persisted_offsets(bounds, KINESIS_SEQUENCE_NUMBERS)
        try:
            answers.append(
                (
                    ledger,
                    offsets.distinct_per_range(ranges),
                    offsets.count_in_spans(scopes),
                    offsets.missing_spans(ranges),
                    lake.count_by_hour([hour - HOUR_MS, hour]),
                    lake.longest_gaps([hour]),
                )
            )
        finally:
            offsets.release()
    return answers


@pytest.fixture
def kinesis(loopback_kinesis, spark):
    """The loopback Kinesis, its identity reaching the session's Python workers for the test."""
    with python_workers_environment(spark, loopback_kinesis.environment):
        yield loopback_kinesis


def test_quality_on_a_kinesis_lake_ok_hole_and_silent_job(kinesis, spark, tmp_path, monkeypatch):
    loopback_kinesis = kinesis
    name = "kquality_checks"
    loopback_kinesis.create_stream(name, 2)
    client = loopback_kinesis.client()
    for key, value in loopback_kinesis.environment.items():
        monkeypatch.setenv(key, value)
    conf = _config(tmp_path, loopback_kinesis.endpoint, name)
    stream = load_stream(conf, "telemetry")
    now_ms = int(time.time() * 1000)
    hour = (now_ms // HOUR_MS - 3) * HOUR_MS
    # Event times rising evenly from 5 minutes before the hour to 40 minutes after it: both shards
    # carry the hour and read past its end and the allowed lateness, so it is sealed.
    count = 250
    first, last = hour - 5 * MINUTE_MS, hour + HOUR_MS + 40 * MINUTE_MS
    step = (last - first) // (count - 1)
    put = put_telemetry(client, name, [(DEVICES[i % len(DEVICES)], first + i * step) for i in range(count)])
    run_persist(conf, log=tmp_path / "persist.log", environment=loopback_kinesis.environment)

    lake = read_lake(tmp_path)
    in_hour = Counter(r.partition for r in put if hour <= r.event_time_ms < hour + HOUR_MS)
    assert set(in_hour) == {0, 1}, "both shards must carry the hour"
    sealed = {row["hour"] for row in spark.read.format("delta").load(stream.table_path("seals")).collect()}
    assert any(int(h.timestamp() * 1000) == hour for h in sealed), f"hour not sealed: {sealed}"
    newest_read_ms = max(int(row["read_time"].timestamp() * 1000) for row in lake.ledger)

    # 1. A complete hour: OK on both shards, the hour's records as put.
    result, by_shard = _check(spark, stream, [hour], newest_read_ms + MINUTE_MS, tmp_path, "complete")
    assert result.success, [p.reasons for p in result.partitions]
    assert {p: q.status for p, q in by_shard.items()} == {0: QualityStatus.OK, 1: QualityStatus.OK}
    figures = {f.partition: f for f in result.hours}
    assert {p: figures[p].records for p in (0, 1)} == dict(in_hour)
    assert all(figures[p].persisted == figures[p].data_records for p in (0, 1))
    assert all("sequence number" in by_shard[p].reason for p in (0, 1)), by_shard[0].reason
    assert not result.recovery_requests

    # 2. Two rows of the hour deleted from shard 0: a HOLE naming the ledger range that held them.
    victims = sorted(r.sequence for r in put if r.partition == 0 and hour <= r.event_time_ms < hour + HOUR_MS)[3:5]
    keys = ", ".join(f"'{position_key(s)}'" for s in victims)
    spark.sql(
        f"DELETE FROM delta.`{stream.table_path('events')}` WHERE source_partition = 0 AND source_offset IN ({keys})"
    )
    (holder,) = [
        row
        for row in lake.ledger_of(0)
        if row["mode"] == "live" and row["start_offset"] <= victims[0] < row["end_offset"]
    ]
    assert holder["start_offset"] <= victims[1] < holder["end_offset"], "the two rows must share a ledger range"
    result, by_shard = _check(spark, stream, [hour], newest_read_ms + MINUTE_MS, tmp_path, "hole")
    hole = by_shard[0]
    assert hole.status is QualityStatus.HOLE and by_shard[1].status is QualityStatus.OK
    assert [(h.start, h.end) for h in hole.holes] == [(holder["start_offset"], holder["end_offset"])]
    assert f"sequence numbers [{holder['start_offset']}, {holder['end_offset']})" in hole.reason
    assert "2 missing" in hole.reason and "shardId-000000000000" in hole.reason
    (request,) = result.recovery_requests
    assert request.partition == 0 and [(r.start, r.end) for r in request.ranges] == [
        (holder["start_offset"], holder["end_offset"])
    ]
    assert "offsets" not in request.reason
    spark_free, with_spark = _facts_of_both_readers(spark, stream, hour)
    assert spark_free == with_spark
    assert sum(count.rows for count in spark_free[2].values()) == len(put) - 2, "every record put, but the two deleted"

    # 3. Records put after the job's last run, judged a stall timeout later: that shard STOP
    #    (the job is silent), a caught-up shard OK; no hour checked.
    late_put = put_telemetry(client, name, [(DEVICES[0], last + MINUTE_MS), (DEVICES[0], last + 2 * MINUTE_MS)])
    unread = {r.partition for r in late_put}
    (caught_up,) = {0, 1} - unread
    judged_at = newest_read_ms + 31 * MINUTE_MS
    result, by_shard = _check(spark, stream, [], judged_at, tmp_path, "silent")
    (stopped,) = unread
    assert by_shard[stopped].status is QualityStatus.STOP, by_shard[stopped].reason
    assert "the job is not running" in by_shard[stopped].reason and "sequence number" in by_shard[stopped].reason
    assert by_shard[caught_up].status is QualityStatus.OK
    assert by_shard[caught_up].reason.endswith("caught up")
    live_end = max(row["end_offset"] for row in lake.ledger_of(stopped) if row["mode"] == "live")
    assert by_shard[stopped].position == live_end and by_shard[stopped].log_end > live_end
    # A silent job asks for no replay (running the job is the cure), as for Kafka.
    assert not [r for r in result.recovery_requests if r.partition == stopped and not by_shard[stopped].holes]

    # 4. tidemark status / the watermark page: every shard, the unread one lagging, no count.
    overview = read_stream_overview(stream, now_ms=judged_at, log_timeout_s=5.0)
    shown = {p.partition: p for p in overview.partitions}
    assert set(shown) == {0, 1}, overview.notes
    assert not overview.notes
    assert shown[stopped].position == live_end and shown[stopped].lag == 1
    assert shown[caught_up].lag == 0
    assert shown[stopped].retention_deadline_ms is not None
