"""Backfills that equal live: the same reader and writer, live's routing decisions, insert-only.

One live lake is built once for the module, the way users get one: partitions 0-2 produce three
hours, partition 3 only the first and goes idle; G moves on without it and seals hours; then
partition 3's producer delivers an hour it held back, which live routes to ``late``. A backfill
of the same range into a shadow set must equal it row for row (late records included: live
decided them, the backfill must not decide again), and the comparison must find a hole when
live lacks records. Real broker, real Delta, the job's own entry point.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
import yaml
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F

from harness.persist_job import (
    backfill_request_args,
    produce,
    run_backfill,
    run_in_process,
    telemetry_value,
    write_stream_config,
)
from spark_jobs.persist.job import run_persist as run_live_persist
from spark_jobs.replay.backfill import main as backfill_main
from tidemark.backfill_result import BackfillRefusal, BackfillResult, decode_backfill_outcome
from tidemark.crash_points import CRASH_AT, TEST_FAULTS, CrashPoint
from tidemark.stream_config import load_stream

pytestmark = pytest.mark.integration

HOUR_MS = 3_600_000
MINUTE_MS = 60_000
EVENT_COLUMNS = [
    "source_partition",
    "source_offset",
    "log_timestamp",
    "event_time",
    "record_key",
    "device_id",
    "lat",
    "lon",
    "battery",
    "event_date",
    "event_hour",
]


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))


def _minutes(partitions, start_ms: int, end_ms: int, every_ms: int = MINUTE_MS) -> list[tuple[int, bytes, int]]:
    return [
        (p, telemetry_value(f"scooter-{p}-{(t // every_ms) % 3}", t), t)
        for t in range(start_ms, end_ms, every_ms)
        for p in partitions
    ]


class LiveLake:
    def __init__(self, conf: Path, root: Path, base_ms: int, bootstrap: str, topic: str):
        self.conf, self.root, self.base_ms, self.bootstrap, self.topic = conf, root, base_ms, bootstrap, topic

    def table(self, spark, table: str, shadow: str | None = None):
        folder = self.root / "telemetry" if shadow is None else self.root / "telemetry" / "shadow" / shadow
        return spark.read.format("delta").load(str(folder / table))


@pytest.fixture(scope="module")
def live_lake(kafka_broker, spark, tmp_path_factory) -> LiveLake:
    folder = tmp_path_factory.mktemp("backfill")
    topic = "backfill_equals_live"
    kafka_broker.create_topic(topic, 4)
    conf = write_stream_config(folder, kafka_broker.bootstrap, topic, 4, max_records_per_batch=300)
    document = yaml.safe_load(conf.read_text())
    # Idle after 1 s of quiet: partition 3 goes idle between two live runs, as it would in minutes.
    # Slices of an hour of event time rather than 15 minutes: fewer batches, the same rules.
    document["streams"]["telemetry"]["event_time"].update(idle_timeout="1s", max_drift="1h")
    conf.write_text(yaml.safe_dump(document))
    base = (int(time.time() * 1000) // HOUR_MS - 6) * HOUR_MS
    bootstrap = kafka_broker.bootstrap

    produce(bootstrap, topic, _minutes(range(3), base, base + 3 * HOUR_MS) + _minutes([3], base, base + HOUR_MS))
    produce(
        bootstrap, topic, [(1, b'{"device_id": "scooter-x", "event_time": ', base + 30 * MINUTE_MS)]
    )  # hostile bytes
    # The live job in this process (the session fixture's Spark): the same code as spark-submit
    # runs, without a JVM start per run.
    stream = load_stream(conf, "telemetry")
    run_live_persist(stream, "available_now", 300)
    time.sleep(1.5)
    produce(bootstrap, topic, _minutes(range(3), base + 3 * HOUR_MS, base + 4 * HOUR_MS))
    run_live_persist(stream, "available_now", 300)
    # Partition 3's producer delivers the hour it held back, far behind G: live routes it to late.
    produce(bootstrap, topic, _minutes([3], base + HOUR_MS, base + 2 * HOUR_MS, every_ms=2 * MINUTE_MS))
    run_live_persist(stream, "available_now", 300)
    return LiveLake(conf, folder / "lake", base, bootstrap, topic)


def _rows(frame, columns) -> list[tuple]:
    return sorted(tuple(row) for row in frame.select(*columns).collect())


def test_a_backfill_into_a_shadow_set_equals_live_row_for_row_late_and_quarantined_records_included(
    live_lake, spark, tmp_path
):
    late = live_lake.table(spark, "late")
    assert late.where("source_partition = 3").count() == 30, "the scenario needs records live routed late"
    start, end = _iso(live_lake.base_ms), _iso(live_lake.base_ms + 4 * HOUR_MS)
    result_path = tmp_path / "result.json"
    code = backfill_main(
        [
            "--conf",
            str(live_lake.conf),
            "--result",
            str(result_path),
            *backfill_request_args(live_lake.conf, start, end, target="shadow", shadow_name="equal", compare=True),
        ]
    )
    assert code == 0
    result = decode_backfill_outcome(result_path.read_bytes())
    assert isinstance(result, BackfillResult)

    live_events, shadow_events = live_lake.table(spark, "events"), live_lake.table(spark, "events", "equal")
    assert _rows(shadow_events, EVENT_COLUMNS) == _rows(live_events, EVENT_COLUMNS)
    key = ["source_partition", "source_offset"]
    assert _rows(live_lake.table(spark, "late", "equal"), [*key, "global_watermark"]) == _rows(
        late, [*key, "global_watermark"]
    )
    assert _rows(live_lake.table(spark, "quarantine", "equal"), [*key, "reason"]) == _rows(
        live_lake.table(spark, "quarantine"), [*key, "reason"]
    )
    assert {r.mode for r in live_lake.table(spark, "ledger", "equal").select("mode").distinct().collect()} == {
        "backfill"
    }
    # Nothing was written to live's tables, and the comparison agrees.
    assert result.comparison.differing == () and result.recovery_requests == ()
    assert result.comparison.records_live == result.comparison.records_shadow == live_events.count()
    assert result.records + result.late + result.quarantined == live_events.count() + late.count() + 1
    assert result.lost == ()

    # The set belongs to that run: another run may not write it (its batches append, they do not MERGE).
    refused = tmp_path / "refused.json"
    again = backfill_main(
        [
            "--conf",
            str(live_lake.conf),
            "--result",
            str(refused),
            *backfill_request_args(
                live_lake.conf, start, end, target="shadow", shadow_name="equal", run_name="another"
            ),
        ]
    )
    assert again == 2
    refusal = decode_backfill_outcome(refused.read_bytes())
    assert isinstance(refusal, BackfillRefusal)
    assert refusal.error.startswith("param 'shadow_name': the shadow set 'equal' already holds another run's backfill")


def test_a_hole_in_live_is_found_and_a_killed_backfill_into_events_fills_it_exactly_once(live_lake, spark, tmp_path):
    from delta.tables import DeltaTable

    from spark_jobs.replay.shadow_comparison import compare_with_live
    from tidemark.offset_coverage import OffsetRange
    from tidemark.stream_config import load_stream

    events_path = str(live_lake.root / "telemetry" / "events")
    hole = (
        live_lake.table(spark, "events")
        .where("source_partition = 1")
        .orderBy("source_offset")
        .select("source_offset", F.unix_millis("event_time").alias("event_ms"))
        .collect()[100:110]
    )
    hole_offsets = [row.source_offset for row in hole]
    DeltaTable.forPath(spark, events_path).delete(
        (F.col("source_partition") == 1) & F.col("source_offset").isin(hole_offsets)
    )
    assert (
        live_lake.table(spark, "events")
        .where(F.col("source_partition") == 1)
        .where(F.col("source_offset").isin(hole_offsets))
        .count()
        == 0
    )

    # The shadow set of the first test holds the whole range: the comparison finds exactly the hole.
    stream = load_stream(live_lake.conf, "telemetry")
    ranges = {p: (0, 10_000) for p in range(4)}
    reconciliation = compare_with_live(spark, stream, "equal", ranges)
    (differing,) = reconciliation.differing
    assert (differing.partition, differing.missing_in_live, differing.live + 10) == (1, 10, differing.shadow)
    assert reconciliation.missing_in_live == {1: (OffsetRange(hole_offsets[0], hole_offsets[-1] + 1),)}
    (request,) = reconciliation.recovery_requests()
    assert request.partition == 1 and request.ranges == (OffsetRange(hole_offsets[0], hole_offsets[-1] + 1),)

    # Backfill into events in small batches, dead right after its second batch's ledger commit
    # (a crash point; in this process the batch fails and the run ends), then the same command.
    hole_hour = hole[0].event_ms // HOUR_MS * HOUR_MS
    args = [
        *backfill_request_args(live_lake.conf, _iso(hole_hour), _iso(hole_hour + HOUR_MS), run_name="fill"),
        "--max-records-per-batch",
        "40",
    ]
    crash = {CRASH_AT: CrashPoint("ledger", batch=1, action="raise").to_json(), TEST_FAULTS: "1"}
    with pytest.raises(StreamingQueryException, match="crash point: after ledger of batch 1"):
        run_in_process(backfill_main, ["--conf", str(live_lake.conf), *args], tmp_path / "killed.log", crash)
    assert run_backfill(live_lake.conf, *args, log=tmp_path / "resumed.log") == 0, (
        tmp_path / "resumed.log"
    ).read_text()[-3000:]
    progress = [line for line in (tmp_path / "resumed.log").read_text().splitlines() if '"backfill_progress"' in line]
    assert progress and '"percent": 100.0' in progress[-1] and '"estimated_seconds_left"' in progress[-1]

    keys = [
        tuple(r)
        for t in ("events", "late", "quarantine")
        for r in live_lake.table(spark, t).select("source_partition", "source_offset").collect()
    ]
    assert {k: n for k, n in Counter(keys).items() if n > 1} == {}
    assert (
        live_lake.table(spark, "events")
        .where(F.col("source_partition") == 1)
        .where(F.col("source_offset").isin(hole_offsets))
        .count()
        == 10
    )
    assert compare_with_live(spark, stream, "equal", ranges).differing == []
    # Partition 1 holds one record a minute from base (offset n at base + n min): the hole's hour
    # [base + 1 h, base + 2 h) is offsets [60, 120), which the backfill's ledger rows cover
    # contiguously across the kill and the resume.
    ledger_rows = (
        live_lake.table(spark, "ledger")
        .where("mode = 'backfill' AND source_partition = 1 AND end_offset > start_offset")
        .collect()
    )
    backfilled = sorted((r.start_offset, r.end_offset) for r in ledger_rows)
    assert hole_hour == live_lake.base_ms + HOUR_MS
    assert (
        backfilled[0][0] == 60
        and backfilled[-1][1] == 120
        and all(a[1] == b[0] for a, b in zip(backfilled, backfilled[1:]))
    ), backfilled


def test_ranges_past_retention_are_refused_or_reported_lost(kafka_broker, spark, tmp_path):
    import json

    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    topic = "backfill_retention"
    kafka_broker.create_topic(topic, 2)
    base = (int(time.time() * 1000) // HOUR_MS - 3) * HOUR_MS
    produce(kafka_broker.bootstrap, topic, _minutes(range(2), base, base + 2 * HOUR_MS, every_ms=2 * MINUTE_MS))
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, 2)
    # Retention takes partition 0's first hour (30 records at 2-minute steps).
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})
    for future in admin.delete_records([TopicPartition(topic, 0, 30)]).values():
        future.result(30)

    refused = tmp_path / "refused.json"
    code = backfill_main(
        [
            "--conf",
            str(conf),
            "--result",
            str(refused),
            *backfill_request_args(
                conf, _iso(base), _iso(base + 30 * MINUTE_MS), partitions="0", target="shadow", shadow_name="gone"
            ),
        ]
    )
    assert code == 2
    assert json.loads(refused.read_text())["error"] == (
        f"[{_iso(base)[:-1]}.000Z, {_iso(base + 30 * MINUTE_MS)[:-1]}.000Z) is beyond the log's retention in every requested "
        f"partition; the log holds records from {_iso(base + HOUR_MS)[:-1]}.000Z on: nothing of it can be read"
    )
    assert not (tmp_path / "lake" / "telemetry" / "shadow" / "gone").exists(), "a refused backfill must do no work"

    partial = tmp_path / "partial.json"
    code = backfill_main(
        [
            "--conf",
            str(conf),
            "--result",
            str(partial),
            *backfill_request_args(conf, _iso(base), _iso(base + 2 * HOUR_MS), target="shadow", shadow_name="partial"),
        ]
    )
    assert code == 3
    result = json.loads(partial.read_text())
    assert result["lost"] == [
        {
            "partition": 0,
            "offsets": [None, 30],
            "event_time": [f"{_iso(base)[:-1]}.000Z", f"{_iso(base + HOUR_MS)[:-1]}.000Z"],
        }
    ]
    assert result["ranges"] == {"0": [30, 60], "1": [0, 60]}
    shadow = spark.read.format("delta").load(str(tmp_path / "lake" / "telemetry" / "shadow" / "partial" / "events"))
    assert _rows(shadow.groupBy("source_partition").count(), ["source_partition", "count"]) == [(0, 30), (1, 60)]
