"""Writers that cannot collide, tried at random: the live job, a recovery and a backfill into
``events`` running at the same time on one stream, each pair started at several moments relative
to the first job's first commit, with a seeded jitter. The claimers read ahead of the live job
(the second half of the backlog), as a recovery of a stalled partition does, so they write
offsets the live job reaches later; the recovery and the backfill overlap each other by a quarter
of the backlog. Whatever the interleaving, the lake holds every produced (partition, offset)
once, in the one table a clean run routes it to, and each claimer's count is what its own
commits inserted (tidemark.write_claims has the argument; these trials try to break it with
real drivers: one job in its own process, the other in the test's, both on the real broker and
Delta).

The moments: ``before`` starts the second job at once (it claims and commits while the first
is still starting its JVM: the incident of issue 24, recovery committing before live's batch);
``during`` once the first has started its query (its first batch is being planned or written);
``after`` once the first has committed its first batch.

The suite places claims exactly instead (tests/integration/test_claims_at_every_moment.py: each
moment of a live batch, recovery and backfill; tests/integration/test_lake_on_s3.py: the incident
on S3 and a live job that dies), which proves more per second than a random moment can. These
trials are ``benchmarks/concurrent_writers.py``, which runs this test with
TIDEMARK_WRITER_TRIALS=<seeds> and writes its results file; a case costs 40-60 s (two drivers).
"""

from __future__ import annotations

import json
import os
import random
import time

import pytest

from harness.log_layouts import routed_pairs
from harness.persist_job import (
    backfill_request_args,
    produce,
    run_backfill,
    run_recover,
    start_backfill,
    start_persist,
    telemetry_value,
    wait_for_event,
    write_stream_config,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not os.environ.get("TIDEMARK_WRITER_TRIALS", "").strip(),
        reason="random interleavings: benchmarks/concurrent_writers.py (the suite places claims exactly)",
    ),
]

HOUR_MS = 3_600_000
PARTITIONS = 2
PER_PARTITION = 600
BUDGET = 200
UNDECODABLE_EVERY = 97  # offsets o with o % 97 == 5 hold bytes that are not JSON: quarantined

# (the job started first, in its own process; the job started second, in the test's)
PAIRS = [("live", "recovery"), ("live", "backfill"), ("backfill", "recovery")]
MOMENTS = ["before", "during", "after"]
FIRST_EVENT = {"before": None, "during": "query_started", "after": "batch_persisted"}


def _cases() -> list:
    """(first, second, moment, seed): the whole matrix for each seed of TIDEMARK_WRITER_TRIALS ("0,1,2")."""
    seeds = os.environ.get("TIDEMARK_WRITER_TRIALS", "").strip()
    return [
        pytest.param(first, second, moment, int(seed), id=f"{first}-{second}-{moment}-seed{seed}")
        for seed in (seeds.split(",") if seeds else ())
        for first, second in PAIRS
        for moment in MOMENTS
    ]


@pytest.fixture(scope="module")
def backlog(kafka_broker, tmp_path_factory):
    """One topic for every case (each case has its own lake): event times rising over the two
    hours before now, every 97th record undecodable."""
    topic = "concurrent_writers"
    kafka_broker.create_topic(topic, PARTITIONS)
    now_ms = int(time.time() * 1000)
    records = []
    for i in range(PER_PARTITION):
        event_ms = now_ms - 2 * HOUR_MS + i * (2 * HOUR_MS) // PER_PARTITION
        for p in range(PARTITIONS):
            value = b"not json {" if i % UNDECODABLE_EVERY == 5 else telemetry_value(f"scooter-{p}-{i % 7}", event_ms)
            records.append((p, value, event_ms))
    assert produce(kafka_broker.bootstrap, topic, records) == {p: PER_PARTITION for p in range(PARTITIONS)}
    return topic, now_ms


@pytest.mark.parametrize("first, second, moment, seed", _cases())
def test_two_writers_at_once_write_each_record_once_in_its_table(
    first, second, moment, seed, backlog, kafka_broker, spark, tmp_path
):
    topic, now_ms = backlog
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, PARTITIONS, max_records_per_batch=BUDGET)
    lake = tmp_path / "lake" / "telemetry"
    jitter_s = random.Random(f"{first}-{second}-{moment}-{seed}").uniform(0, 1.0)

    job = _start(first, conf, now_ms, tmp_path)
    if FIRST_EVENT[moment]:
        wait_for_event(tmp_path / f"{first}.log", FIRST_EVENT[moment], job)
    time.sleep(jitter_s)
    assert _run(second, conf, now_ms, tmp_path) == 0, (tmp_path / f"{second}.log").read_text()[-3000:]
    assert job.wait(300) == 0, (tmp_path / f"{first}.log").read_text()[-3000:]

    routed = routed_pairs(lake)
    twice = {pair: tables for pair, tables in routed.items() if len(tables) > 1}
    claimed = [json.loads((tmp_path / f"{job_}.json").read_text()) for job_ in (first, second) if job_ != "live"]
    conflicts = sum(result["commit_conflicts_retried"] for result in claimed)
    _record_trial(first, second, moment, seed, jitter_s, len(routed), len(twice), conflicts)
    assert twice == {}, f"{len(twice)} pairs written more than once, e.g. {sorted(twice.items())[:5]}"
    written = _written_offsets(first, second)
    expected = {(p, o): ("quarantine" if o % UNDECODABLE_EVERY == 5 else "events") for p, o in written}
    assert {pair: tables[0] for pair, tables in routed.items()} == expected

    # A claimer's count is its own commits' (their MERGE metrics): the live job's plain appends
    # never MERGE here, so the claimers' counts add up to the rows all MERGEs inserted.
    assert sum(result["inserted"] for result in claimed) == _merged_rows(str(lake))
    if "live" not in (first, second):
        assert sum(result["inserted"] for result in claimed) == len(written)


def _record_trial(first, second, moment, seed, jitter_s, pairs, twice, conflicts) -> None:
    """One line per case in TIDEMARK_WRITER_TRIALS_FILE when set (the trials script's results)."""
    path = os.environ.get("TIDEMARK_WRITER_TRIALS_FILE")
    if path:
        line = {
            "first": first,
            "second": second,
            "moment": moment,
            "seed": seed,
            "jitter_s": round(jitter_s, 2),
            "pairs": pairs,
            "written_twice": twice,
            "commit_conflicts_retried": conflicts,
        }
        with open(path, "a") as out:
            out.write(json.dumps(line) + "\n")


def _written_offsets(first: str, second: str) -> set[tuple[int, int]]:
    """What the two jobs write between them: live every offset; the backfill the second half of
    each partition (its event-time range), the recovery partition 0 from half way (beside live)
    or from a quarter (beside the backfill, overlapping it)."""
    if "live" in (first, second):
        return {(p, o) for p in range(PARTITIONS) for o in range(PER_PARTITION)}
    backfill = {(p, o) for p in range(PARTITIONS) for o in range(PER_PARTITION // 2, PER_PARTITION)}
    return backfill | {(0, o) for o in range(PER_PARTITION // 4, PER_PARTITION)}


def _start(job: str, conf, now_ms: int, tmp_path):
    log = tmp_path / f"{job}.log"
    if job == "live":
        return start_persist(conf, "--mode", "available_now", "--run-summary", str(tmp_path / "live.json"), log=log)
    return start_backfill(conf, *_backfill_args(conf, now_ms, tmp_path), log=log)


def _run(job: str, conf, now_ms: int, tmp_path) -> int:
    log = tmp_path / f"{job}.log"
    if job == "recovery":
        start = PER_PARTITION // 2 if (tmp_path / "live.log").exists() else PER_PARTITION // 4
        return run_recover(conf, 0, f"{start}-{PER_PARTITION}", log=log, result=tmp_path / "recovery.json")
    return run_backfill(conf, *_backfill_args(conf, now_ms, tmp_path), log=log)


def _backfill_args(conf, now_ms: int, tmp_path) -> list[str]:
    """The second half of the backlog's event-time range (its last hour), into events."""
    return [
        *backfill_request_args(conf, _iso(now_ms - HOUR_MS), _iso(now_ms)),
        "--result",
        str(tmp_path / "backfill.json"),
    ]


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + "Z"


def _merged_rows(lake: str, environ: dict[str, str] | None = None) -> int:
    """Rows inserted by every MERGE commit of events, late and quarantine (their commit infos)."""
    from connectors.lake_storage import open_delta_table

    return sum(
        int(commit.get("operationMetrics", {}).get("numTargetRowsInserted", 0))
        for table in ("events", "late", "quarantine")
        for commit in open_delta_table(f"{lake}/{table}", environ=environ).history()
        if commit.get("operation") == "MERGE"
    )
