"""Maintenance on a lake that is being written (issue 40): compaction of sealed hours beside a
live run, then VACUUM, then every reader. Real broker, Spark and Delta on local disk.

Live runs in a thread of this process (harness.interleaving.LiveInThread): the maintenance job's
compaction commits once exactly between live's first batch deciding and committing (live paused
there), then again and again in the test's thread while live goes on: two transactions of one JVM meet in
Delta's optimistic concurrency exactly as two drivers' do. The lake must end as if nothing had
happened but the file count: live never failed, every (partition, offset) once, the quality
run sees no damage, and after VACUUM deleted the compactions' inputs, the readers (the quality
run, ``tidemark status``'s overview, a backfill comparing with live) read everything. Last, the
Delta log's history is cleaned up behind the damage scan after a DELETE: the deletion is found.
"""

from __future__ import annotations

import json
import time
from collections import Counter

import msgspec
import pytest
import yaml

from harness.interleaving import LiveInThread, pause_at, resume, wait_until_paused_in_thread
from harness.persist_job import (
    backfill_request_args,
    produce,
    run_backfill,
    run_persist,
    telemetry_value,
    write_stream_config,
)
from harness.quality_run import run_quality, statuses
from tidemark.stream_config import load_stream

pytestmark = pytest.mark.integration

TOPIC = "lake_maintenance"
PARTITIONS = 2
HOUR_MS = 3_600_000
STEP_MS = 4 * 60_000  # one record a partition every 4 minutes: 15 a partition-hour


def _records(start_ms: int, end_ms: int) -> list[tuple[int, bytes, int]]:
    return [
        (p, telemetry_value(f"dev-{p}-{t // STEP_MS % 5}", t), t)
        for t in range(start_ms, end_ms, STEP_MS)
        for p in range(PARTITIONS)
    ]


def test_compaction_beside_live_then_vacuum_change_nothing_any_reader_sees_but_the_files(kafka_broker, spark, tmp_path):
    """... and a deletion the cleaned-up log no longer shows is still found (at the end)."""
    from connectors.lake_reader import read_stream_overview
    from connectors.lake_storage import open_delta_table
    from connectors.maintenance_look import files_per_hour, look_before_maintaining, sealed_hours
    from spark_jobs.maintenance.job import run_maintenance

    kafka_broker.create_topic(TOPIC, PARTITIONS)
    now_ms = int(time.time() * 1000)
    base_ms = now_ms - now_ms % HOUR_MS - 4 * HOUR_MS
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, TOPIC, PARTITIONS, max_records_per_batch=24)
    document = yaml.safe_load(conf.read_text())
    # A retention the test can outwait; reader_timeout shorter, as the rule demands.
    document["streams"]["telemetry"]["maintenance"] = {
        "compact_min_files": 2,
        "reader_timeout": "1s",
        "vacuum_retain": "2s",
    }
    conf.write_text(yaml.safe_dump(document))
    stream = load_stream(conf, "telemetry")
    events = stream.table_path("events")

    # Three hours in small batches: every sealed hour gathers several files.
    produced = _records(base_ms, base_ms + 3 * HOUR_MS)
    produce(kafka_broker.bootstrap, TOPIC, produced)
    run_persist(conf, log=tmp_path / "first.log")
    before = files_per_hour(events)
    sealed = sealed_hours(stream)
    due = sorted(h for h in sealed if before.get(h, 0) >= 2)
    assert len(due) >= 2, f"sealed hours {sealed}, files per hour {before}: the test needs hours to compact"
    assert look_before_maintaining(stream).reason == f"{len(due)} sealed hours of events to compact"

    # The fourth hour arrives while live persists it, and compaction runs beside it until it ends.
    later = _records(base_ms + 3 * HOUR_MS, base_ms + 4 * HOUR_MS)
    produce(kafka_broker.bootstrap, TOPIC, later)
    produced += later
    # Once exactly between live's decision and its commit (its first batch paused there), then
    # again and again while live goes on.
    decided = pause_at(tmp_path / "pauses", "decided", 0)
    live = LiveInThread(conf, tmp_path / "live.log", (decided,)).start()
    wait_until_paused_in_thread(decided, live, tmp_path / "live.log")
    runs = [run_maintenance(spark, stream, vacuum=False)]
    assert sum(len(day.hours) for day in runs[0].compacted) >= len(due), runs[0].summary()
    resume(decided)
    while live.alive():
        runs.append(run_maintenance(spark, stream, vacuum=False))
        time.sleep(0.5)  # as a scheduled run would: not a loop that holds the driver's Python
    summary = live.join()
    runs.append(run_maintenance(spark, stream, vacuum=False))  # the hours live sealed meanwhile

    # Live ran to its end; every record once; each hour compacted is one file now.
    assert summary is not None and summary.batches >= 2, summary
    persisted = Counter(
        zip(
            *(
                open_delta_table(events)
                .to_pyarrow_table(columns=["source_partition", "source_offset"])
                .column(c)
                .to_pylist()
                for c in ("source_partition", "source_offset")
            ),
            strict=True,
        )
    )
    offsets = {p: 0 for p in range(PARTITIONS)}
    expected = []
    for partition, _, _ in produced:
        expected.append((partition, offsets[partition]))
        offsets[partition] += 1
    assert persisted == Counter(expected), "every (partition, offset) once"
    compacted = [day for run in runs for day in run.compacted if not day.yielded]
    after = files_per_hour(events)
    compacted_hours = {hour for day in compacted for hour in day.hours}
    assert len(compacted_hours) >= len(due), [r.summary() for r in runs]
    for hour_ms in sealed_hours(stream):
        if before.get(hour_ms, 0) >= 2:
            assert after[hour_ms] == 1, f"hour {hour_ms}: {before[hour_ms]} files before, {after[hour_ms]} after"
    live_lines = [json.loads(line) for line in (tmp_path / "live.log").read_text().splitlines() if line.startswith("{")]
    assert not [line for line in live_lines if line.get("level") == "ERROR"], "live logged no error"

    # The quality run: every partition OK, and the compactions are no damage (nothing re-checked).
    home = tmp_path / "home"
    result = run_quality(conf, home, tmp_path, "after_compaction")
    assert statuses(result) == {p: "OK" for p in range(PARTITIONS)}
    assert result["damage"] == [], result["damage"]

    # Compacted and nothing claimed: the operator's look (no Spark) finds nothing to do but VACUUM,
    # whose 2 s retention has passed for the compactions' inputs.
    look = look_before_maintaining(stream)
    assert not look.nothing_to_do and "older than its retention to vacuum" in look.reason, look

    # VACUUM with a week's retention deletes nothing yet; once the configured 2 s have passed, it
    # deletes exactly the files the compactions removed. The retention each table holds is the
    # configuration's: delta-spark 4.4 ignores VACUUM's own RETAIN argument.
    week = msgspec.structs.replace(
        stream,
        maintenance=msgspec.structs.replace(stream.maintenance, vacuum_retain_ms=7 * 24 * HOUR_MS),
    )
    kept = run_maintenance(spark, week)
    assert {table.files_deleted for table in kept.vacuumed} == {0}, kept.summary()
    time.sleep(2.5)
    vacuumed = run_maintenance(spark, stream)
    deleted = {table.table: table.files_deleted for table in vacuumed.vacuumed}
    assert deleted["events"] == sum(day.files_removed for day in compacted), vacuumed.summary()
    look = look_before_maintaining(stream)
    assert look.nothing_to_do, f"an idle lake's maintenance starts no Spark job: {look.reason}"

    # Every reader after it: the quality run, the status overview, a backfill comparing with live.
    assert statuses(run_quality(conf, home, tmp_path, "after_vacuum")) == {p: "OK" for p in range(PARTITIONS)}
    overview = read_stream_overview(stream, ask_log=False)
    assert {p.partition: p.position for p in overview.partitions} == offsets, overview.partitions
    window = [time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000)) for ms in (base_ms, base_ms + 3 * HOUR_MS)]
    code = run_backfill(
        conf,
        *backfill_request_args(conf, *window, target="shadow", shadow_name="after_vacuum", compare=True),
        log=tmp_path / "backfill.log",
    )
    assert code == 0, (tmp_path / "backfill.log").read_text()[-4000:]

    # The Delta log's history cleaned up behind the damage scan (as delta.logRetentionDuration
    # does at a checkpoint): rows deleted from a checked hour, then every commit file up to a
    # checkpoint after the DELETE removed, the DELETE's own among them. The next quality run cannot
    # read what happened since its last run, says so, checks every sealed hour again, and finds
    # the deleted offsets.
    _delete_and_clean_the_log_behind_it(
        spark, events, "source_partition = 0 AND source_offset >= 3 AND source_offset < 7"
    )
    result = run_quality(conf, home, tmp_path, "after_log_cleanup")
    (gone,) = [d for d in result["damage"] if d["table"] == "events"]
    assert (gone["kind"], gone["operation"].split(" (")[0]) == ("log_gone", "LOG CLEANED UP"), gone
    (partition_0,) = [p for p in result["partitions"] if p["partition"] == 0]
    assert partition_0["status"] == "HOLE" and partition_0["holes"] == [[3, 7]], partition_0


def _delete_and_clean_the_log_behind_it(spark, table: str, condition: str) -> None:
    """DELETE ``condition`` from ``table``, then leave only a checkpoint after it: the JSON commits
    and checkpoints before it removed, as the log's cleanup removes them."""
    from pathlib import Path

    from delta.tables import DeltaTable

    spark.sql(f"ALTER TABLE delta.`{table}` SET TBLPROPERTIES ('delta.checkpointInterval' = '1')")
    DeltaTable.forPath(spark, table).delete(condition)
    spark.sql(f"ALTER TABLE delta.`{table}` SET TBLPROPERTIES ('tidemark.test' = 'after the delete')")
    log = Path(table) / "_delta_log"
    newest = max(int(path.name.split(".")[0]) for path in log.glob("*.json"))
    assert (log / f"{newest:020d}.checkpoint.parquet").exists(), sorted(p.name for p in log.iterdir())
    for path in log.iterdir():
        version = path.name.split(".")[0]
        if version.isdigit() and int(version) < newest:
            path.unlink()
