"""Crash trials: SIGKILL at random moments across live, recovery and a backfill into events,
running in turn on one stream (not in the suite: benchmarks/crash_trials.py runs it).

    TIDEMARK_CRASH_TRIALS=20:1 pytest tests/integration/test_crash_trials.py

Each trial adds 20 minutes of event time to both partitions (with two records far behind G, so
late, and one that is not JSON), then starts one job in its own process (live, a recovery or a
backfill into events, in turn; for the last two a random range of persisted offsets is deleted
first, so they have work) and kills it (SIGKILL of its process group: JVM and Python) after a
random delay, seeded (mostly within the query's first seconds, where its batches commit;
one kill in five during the start-up). Then the same job runs again to its end, and live catches up. The lake
must hold every produced (partition, offset) exactly once. A live trial deletes the checkpoint
after the kill in one case of two. Each trial's figures go to TIDEMARK_CRASH_TRIALS_FILE.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from harness.log_layouts import lake_offsets
from harness.persist_job import (
    REPO,
    backfill_request_args,
    job_environment,
    produce,
    recovery_request_args,
    run_backfill,
    run_persist,
    run_recover,
    start_backfill,
    start_persist,
    telemetry_value,
    wait_for_event,
    write_stream_config,
)

TRIALS = os.environ.get("TIDEMARK_CRASH_TRIALS", "")
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not TRIALS, reason="crash trials run from benchmarks/crash_trials.py (TIDEMARK_CRASH_TRIALS=N:SEED)"
    ),
]

HOUR_MS = 3_600_000
MINUTE_MS = 60_000
KINDS = ("live", "recovery", "backfill")


def _chunk(start_ms: int, every_ms: int = 15_000) -> list[tuple[int, bytes, int]]:
    """20 minutes of records on both partitions, after two late ones and one that is not JSON."""
    late = [(p, telemetry_value(f"late-{p}", start_ms - 2 * HOUR_MS), start_ms - 2 * HOUR_MS) for p in (0, 1)]
    hostile = [(1, b'{"device_id": "scooter-x", "event_time": ', start_ms)]
    return (
        late
        + hostile
        + [
            (p, telemetry_value(f"scooter-{p}-{(t // every_ms) % 5}", t), t)
            for t in range(start_ms, start_ms + 20 * MINUTE_MS, every_ms)
            for p in (0, 1)
        ]
    )


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))


def _start_recovery(conf: Path, partition: int, ranges: str, log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            str(REPO / "spark_jobs" / "replay" / "recover.py"),
            "--conf",
            str(conf),
            *recovery_request_args(conf, partition, ranges, reason="crash trial"),
        ],
        env=job_environment(),
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def test_random_kills_across_live_recovery_and_backfill_lose_and_duplicate_nothing(kafka_broker, spark, tmp_path):
    count, _, seed = TRIALS.partition(":")
    count, seed = int(count), int(seed or 0)
    rng = random.Random(seed)
    topic = f"crash_trials_{seed}"
    kafka_broker.create_topic(topic, 2)
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, 2, max_records_per_batch=100)
    lake = tmp_path / "lake" / "telemetry"
    clock = first = (int(time.time() * 1000) // HOUR_MS - 8) * HOUR_MS
    produced = Counter(produce(kafka_broker.bootstrap, topic, _chunk(clock)))
    clock += 20 * MINUTE_MS
    run_persist(conf, "--mode", "available_now", log=tmp_path / "start.log")

    results = []
    for trial in range(count):
        kind = KINDS[trial % len(KINDS)]
        produced.update(produce(kafka_broker.bootstrap, topic, _chunk(clock)))
        clock += 20 * MINUTE_MS
        log = tmp_path / f"trial-{trial}-{kind}.log"
        hole = None
        if kind == "live":
            job = start_persist(conf, "--mode", "available_now", log=log)
        else:
            run_persist(conf, "--mode", "available_now", log=tmp_path / f"trial-{trial}-before.log")
            partition = rng.randrange(2)
            start = rng.randrange(0, produced[partition] - 120)
            hole = (partition, start, start + rng.randrange(20, 120))
            for table in ("events", "late", "quarantine"):
                spark.sql(
                    f"DELETE FROM delta.`{lake / table}` WHERE source_partition = {partition} "
                    f"AND source_offset >= {hole[1]} AND source_offset < {hole[2]}"
                )
            if kind == "recovery":
                job = _start_recovery(conf, partition, f"{hole[1]}-{hole[2]}", log)
            else:
                backfill_args = backfill_request_args(
                    conf, _iso(first - 3 * HOUR_MS), _iso(clock), partitions=str(partition), run_name=f"trial-{trial}"
                )
                job = start_backfill(conf, *backfill_args, log=log)

        # One kill in five at a random moment of the start-up (JVM, Spark, tables, the claim);
        # the others at a random moment of the query's first 15 seconds, where its batches commit.
        started = time.monotonic()
        if rng.random() < 0.2:
            delay = rng.uniform(1.0, 10.0)
        else:
            wait_for_event(log, "query_started", job, timeout_s=180)
            delay = time.monotonic() - started + rng.uniform(0.0, 15.0)
        try:
            job.wait(max(0.0, delay - (time.monotonic() - started)))
            killed = False
        except subprocess.TimeoutExpired:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait(30)
            killed = True
        text = log.read_text(errors="replace")
        mid_query = killed and '"query_started"' in text and '"query_finished"' not in text
        checkpoint_deleted = kind == "live" and killed and rng.random() < 0.5
        if checkpoint_deleted:
            shutil.rmtree(tmp_path / "checkpoints" / "telemetry" / "persist", ignore_errors=True)

        # The repair: the same job to its end, then live catches up.
        again = tmp_path / f"trial-{trial}-again.log"
        if kind == "recovery":
            assert (
                run_recover(conf, hole[0], f"{hole[1]}-{hole[2]}", log=again, result=tmp_path / f"trial-{trial}.json")
                == 0
            )
        elif kind == "backfill":
            assert run_backfill(conf, *backfill_args, log=again) == 0
        run_persist(conf, "--mode", "available_now", log=tmp_path / f"trial-{trial}-live.log")

        found = Counter(lake_offsets(spark, lake))
        expected = {(p, o) for p, n in produced.items() for o in range(n)}
        result = {
            "trial": trial,
            "job": kind,
            "kill_after_s": round(delay, 1),
            "killed": killed,
            "killed_mid_query": mid_query,
            "batches_before_kill": text.count('"batch_persisted"'),
            "checkpoint_deleted": checkpoint_deleted,
            "hole": list(hole) if hole else None,
            "records": len(expected),
            "lost": len(expected - set(found)),
            "duplicated": sum(1 for n in found.values() if n > 1),
            "unexpected": len(set(found) - expected),
        }
        results.append(result)
        print(json.dumps(result), flush=True)

    trials_file = os.environ.get("TIDEMARK_CRASH_TRIALS_FILE")
    if trials_file:
        Path(trials_file).write_text("".join(json.dumps(r) + "\n" for r in results))
    assert [r for r in results if r["lost"] or r["duplicated"] or r["unexpected"]] == []
