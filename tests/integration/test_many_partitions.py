"""A wide topic against the real broker, Spark and Delta: a batch's cost follows its data, not the
partition count, and a topic past the safety limit stops the job before any work.

What must hold on a topic of many partitions, most of them with little or nothing to read: every
produced (partition, offset) is persisted exactly once; every partition has its ledger rows,
contiguous from its first offset to its end; and a batch reads with at most ``read_tasks`` Spark
tasks (seen as the files a batch adds to the events table: one per task and event hour, where a
task per Kafka partition had added one per partition).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter, defaultdict

import pytest
import yaml

from harness.log_layouts import lake_offsets
from harness.persist_job import (
    PERSIST_JOB,
    batches_persisted,
    job_environment,
    produce,
    run_persist,
    telemetry_value,
    write_stream_config,
)

pytestmark = pytest.mark.integration

HOUR_MS = 3_600_000
PARTITIONS = 48


def test_a_wide_topic_is_read_with_few_tasks_and_every_partition_is_ledgered(kafka_broker, spark, tmp_path):
    topic = "many_partitions"
    kafka_broker.create_topic(topic, PARTITIONS)
    now_ms = int(time.time() * 1000)
    start_ms = now_ms - 2 * HOUR_MS
    # 480 records over 90 minutes, round-robin; the last 8 partitions get nothing at all.
    busy = PARTITIONS - 8
    records = [
        (i % busy, telemetry_value(f"scooter-{i % busy}", start_ms + i * 11_250), start_ms + i * 11_250)
        for i in range(480)
    ]
    produced = produce(kafka_broker.bootstrap, topic, records)
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, PARTITIONS)
    document = yaml.safe_load(conf.read_text())
    document["streams"]["telemetry"]["source"]["read_tasks"] = 2
    conf.write_text(yaml.safe_dump(document))

    run_persist(conf, "--mode", "available_now", log=tmp_path / "persist.log")

    lake = tmp_path / "lake" / "telemetry"
    found = lake_offsets(spark, lake)
    assert Counter(found).most_common(1)[0][1] == 1, "a (partition, offset) persisted twice"
    assert set(found) == {(p, o) for p, n in produced.items() for o in range(n)}

    ledger = (
        spark.read.format("delta")
        .load(str(lake / "ledger"))
        .orderBy("source_partition", "start_offset", "step_id")
        .collect()
    )
    by_partition = defaultdict(list)
    for row in ledger:
        by_partition[row.source_partition].append(row)
    assert sorted(by_partition) == list(range(PARTITIONS)), "every partition has ledger rows, idle ones too"
    for partition, rows in by_partition.items():
        reads = [row for row in rows if row.end_offset > row.start_offset]
        assert all(a.end_offset == b.start_offset for a, b in zip(reads, reads[1:]))
        assert (reads[-1].end_offset if reads else 0) == produced.get(partition, 0)
        assert sum(row.records for row in rows) == produced.get(partition, 0)

    # The job's log says how many of the topic's partitions each batch read: never the idle ones.
    batches = batches_persisted(tmp_path / "persist.log")
    assert batches, "the job logged no batch"
    for batch in batches:
        read, of = batch["partitions_read"].split(" of ")
        assert int(of) == PARTITIONS and int(read) <= busy, batch

    # Each events commit adds one file per read task and event hour, never one per partition.
    for adds in _files_added_per_commit(lake / "events"):
        hours = {(add["partitionValues"]["event_date"], add["partitionValues"]["event_hour"]) for add in adds}
        assert len(adds) <= 2 * len(hours), f"{len(adds)} files for {len(hours)} event hours: more than 2 read tasks"


def test_a_topic_past_max_partitions_fails_at_start_up_naming_the_key(kafka_broker, tmp_path):
    topic = "past_the_limit"
    kafka_broker.create_topic(topic, 8)
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, 2)
    document = yaml.safe_load(conf.read_text())
    document["streams"]["telemetry"]["source"]["max_partitions"] = 4
    conf.write_text(yaml.safe_dump(document))

    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, str(PERSIST_JOB), "--stream", "telemetry", "--conf", str(conf), "--mode", "available_now"],
        env=job_environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2, result.stdout[-3000:] + result.stderr[-3000:]
    assert (
        "topic 'past_the_limit' has 8 partitions, more than source.max_partitions (4); "
        "if that is expected, set source.max_partitions: 1024 for this stream"
    ) in result.stderr
    assert not (tmp_path / "lake").exists(), "nothing was created before the check"
    assert time.monotonic() - started < 60


def _files_added_per_commit(table) -> list[list[dict]]:
    """The ``add`` actions of each commit of a Delta table that added files (its JSON log)."""
    commits = []
    for entry in sorted((table / "_delta_log").glob("*.json")):
        adds = [json.loads(line)["add"] for line in entry.read_text().splitlines() if line.startswith('{"add"')]
        if adds:
            commits.append(adds)
    assert commits, f"no commit added files to {table}"
    return commits
