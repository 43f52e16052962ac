"""Controlled crash points (tidemark.crash_points): a job dies right after one named commit of a
batch holding late and quarantined records, and the next run, with the checkpoint kept (a
replay) or deleted (a resume from the ledger), leaves the lake exactly as one clean run does:
the same rows in the same tables, each hour sealed once, the ledger contiguous.

One small backlog for the whole module. Phase 1 (three hours on two partitions) is persisted
once and kept as a snapshot (lake and checkpoint folders). Phase 2 holds an hour more on both
partitions, and on partition 0 records of an hour G has long passed (late) and one that is not
JSON (quarantine): the first batch of the run that reads it commits to events, late,
quarantine, seals and the ledger. Each case copies the snapshot, runs phase 2 with a crash
point, and runs it again. The reference is phase 2 run once without a crash.

The jobs run in this process (``action: raise``: the batch fails, Spark commits nothing of it,
the run ends) to keep the suite within its budget. The production action, SIGKILL of the JVM and
of Python, is the crash of tests/integration/test_lake_on_s3.py (and of benchmarks/crash_trials.py's
kills, from outside).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.persist_job import (
    backfill_request_args,
    produce,
    recovery_request_args,
    run_in_process,
    telemetry_value,
    write_stream_config,
)
from spark_jobs.persist.job import main as persist_main
from tidemark.crash_points import CRASH_AT, TEST_FAULTS, CrashPoint

pytestmark = pytest.mark.integration

HOUR_MS = 3_600_000
MINUTE_MS = 60_000
TOPIC = "crash_points"
BUDGET = "1000"
KEY = ["source_partition", "source_offset"]
# What a clean run and a repaired one must agree on, per table (run-specific columns left out:
# when a quarantined record was read).
COMPARED = {
    "events": [
        *KEY,
        "log_timestamp",
        "event_time",
        "record_key",
        "device_id",
        "lat",
        "lon",
        "battery",
        "step_id",
        "event_date",
        "event_hour",
    ],
    "late": [*KEY, "event_time", "device_id", "global_watermark"],
    "quarantine": [*KEY, "reason", "detail", "raw_value"],
}


@dataclass(frozen=True)
class Backlog:
    snapshot: Path  # phase 1 persisted: its lake/ and checkpoints/ folders
    reference: Path  # phase 2 persisted after it, without a crash
    bootstrap: str
    log_ends: dict[int, int]
    base_ms: int  # the first hour's start
    phase2_start: int  # partition 0's first offset of phase 2


def _minutes(partitions, start_ms: int, end_ms: int, every_ms: int = 4 * MINUTE_MS) -> list[tuple[int, bytes, int]]:
    return [
        (p, telemetry_value(f"scooter-{p}-{(t // every_ms) % 3}", t), t)
        for t in range(start_ms, end_ms, every_ms)
        for p in partitions
    ]


def _copy(source: Path, target: Path, bootstrap: str) -> Path:
    """A stream folder with ``source``'s lake and checkpoints and a config of its own; its path."""
    for folder in ("lake", "checkpoints"):
        shutil.copytree(source / folder, target / folder)
    return write_stream_config(target, bootstrap, TOPIC, 2, max_records_per_batch=int(BUDGET))


def _persist(conf: Path, log: Path, point: CrashPoint | None = None) -> int:
    environment = {CRASH_AT: point.to_json(), TEST_FAULTS: "1"} if point else {}
    return run_in_process(
        persist_main, ["--stream", "telemetry", "--conf", str(conf), "--mode", "available_now"], log, environment
    )


@pytest.fixture(scope="module")
def backlog(kafka_broker, spark, tmp_path_factory) -> Backlog:
    root = tmp_path_factory.mktemp("crash_points")
    kafka_broker.create_topic(TOPIC, 2)
    bootstrap = kafka_broker.bootstrap
    base = (int(time.time() * 1000) // HOUR_MS - 5) * HOUR_MS
    produce(bootstrap, TOPIC, _minutes(range(2), base, base + 3 * HOUR_MS))
    snapshot = root / "snapshot"
    snapshot.mkdir()
    assert (
        _persist(
            write_stream_config(snapshot, bootstrap, TOPIC, 2, max_records_per_batch=int(BUDGET)), root / "phase1.log"
        )
        == 0
    )

    late = [
        (0, telemetry_value("scooter-late", t), t)
        for t in range(base + HOUR_MS, base + HOUR_MS + 5 * MINUTE_MS, MINUTE_MS)
    ]
    # Log timestamps in log order: one ahead of the rest would slice partition 0 ahead of them.
    hostile = [(0, b'{"device_id": "scooter-x", "event_time": ', base + 3 * HOUR_MS)]
    log_ends = produce(bootstrap, TOPIC, late + hostile + _minutes(range(2), base + 3 * HOUR_MS, base + 4 * HOUR_MS))
    reference = root / "reference"
    reference.mkdir()
    assert _persist(_copy(snapshot, reference, bootstrap), root / "reference.log") == 0
    ends = _log_ends(spark, snapshot, log_ends)
    return Backlog(snapshot, reference, bootstrap, ends, base, ends[0] - log_ends[0])


def _log_ends(spark, snapshot: Path, phase2: dict[int, int]) -> dict[int, int]:
    """Each partition's log end: what phase 1 persisted (its ledger's last end) plus phase 2."""
    ledger = spark.read.format("delta").load(str(snapshot / "lake" / "telemetry" / "ledger")).collect()
    return {p: max(r.end_offset for r in ledger if r.source_partition == p) + phase2.get(p, 0) for p in (0, 1)}


def _table(stream_folder: Path, table: str, shadow: str | None = None, columns: list[str] | None = None) -> list[dict]:
    """A table's rows as dicts, read with delta-rs: a comparison reads ten tables, and Spark's
    jobs for them cost more than the runs under test."""
    from deltalake import DeltaTable

    lake = stream_folder / "lake" / "telemetry"
    return (
        DeltaTable(str(lake / table if shadow is None else lake / "shadow" / shadow / table))
        .to_pyarrow_table(columns=columns)
        .to_pylist()
    )


def _rows(stream_folder: Path, table: str, shadow: str | None = None, step_ids: bool = True) -> list[tuple]:
    columns = [c for c in COMPARED[table] if step_ids or c != "step_id"]
    return sorted(tuple(row[c] for c in columns) for row in _table(stream_folder, table, shadow, columns))


def assert_lake_equals_one_clean_run(
    spark, folder: Path, backlog: Backlog, shadow: str | None = None, step_ids: bool = True
) -> None:
    """The same rows in the same tables as the reference, no (partition, offset) twice, each hour
    sealed once (the same hours), and every partition's live ledger contiguous from 0 to its end.
    ``shadow``: compare that shadow set's tables instead; ``step_ids``: compare them too (a
    recovery or a backfill numbers its own batches)."""
    offsets = []
    for table in COMPARED:
        found = _rows(folder, table, shadow, step_ids)
        expected = _rows(backlog.reference, table, step_ids=step_ids)
        twice = [key for key, n in Counter(row[:2] for row in found).items() if n > 1]
        assert twice == [], f"{table}: {len(twice)} (partition, offset) pairs written twice, e.g. {twice[:3]}"
        assert found == expected, (
            f"{table}: {len(set(found) - set(expected))} rows too many, {len(set(expected) - set(found))} missing"
        )
        offsets.extend(row[:2] for row in found)
    assert len(offsets) == len(set(offsets)), "a (partition, offset) is in two tables"
    seals = Counter(r["hour"] for r in _table(folder, "seals", columns=["hour"]))
    reference_seals = {r["hour"] for r in _table(backlog.reference, "seals", columns=["hour"])}
    assert set(seals) == reference_seals and max(seals.values()) == 1, f"each hour sealed once: {dict(seals)}"
    ledger = [
        r
        for r in _table(folder, "ledger", columns=["mode", "source_partition", "start_offset", "end_offset"])
        if r["mode"] == "live"
    ]
    for partition, end in backlog.log_ends.items():
        ranges = sorted(
            (r["start_offset"], r["end_offset"])
            for r in ledger
            if r["source_partition"] == partition and r["end_offset"] > r["start_offset"]
        )
        assert ranges[0][0] == 0 and ranges[-1][1] == end, (
            f"partition {partition}: ledger covers {ranges[0][0]}..{ranges[-1][1]}, log end {end}"
        )
        gaps = [(a, b) for a, b in zip(ranges, ranges[1:]) if b[0] != a[1]]
        assert gaps == [], f"partition {partition}: ledger not contiguous at {gaps[:3]}"


def _damaged(backlog: Backlog, folder: Path, spark) -> Path:
    """The reference lake without partition 0's phase 2 (in events, late and quarantine): what
    a recovery or a backfill into events writes again. Its config's path."""
    conf = _copy(backlog.reference, folder, backlog.bootstrap)
    for table in COMPARED:
        path = folder / "lake" / "telemetry" / table
        spark.sql(f"DELETE FROM delta.`{path}` WHERE source_partition = 0 AND source_offset >= {backlog.phase2_start}")
    return conf


def _recover(conf: Path, backlog: Backlog, log: Path, point: CrashPoint | None = None) -> int:
    from spark_jobs.replay.recover import main as recover_main

    argv = ["--conf", str(conf), *recovery_request_args(conf, 0, f"{backlog.phase2_start}-{backlog.log_ends[0]}")]
    return run_in_process(recover_main, argv, log, {CRASH_AT: point.to_json(), TEST_FAULTS: "1"} if point else {})


def _backfill(conf: Path, backlog: Backlog, log: Path, target: str, point: CrashPoint | None = None) -> int:
    from spark_jobs.replay.backfill import main as backfill_main

    argv = [
        "--conf",
        str(conf),
        *backfill_request_args(
            conf,
            _iso(backlog.base_ms),
            _iso(backlog.base_ms + 4 * HOUR_MS),
            target=target,
            partitions="0" if target == "events" else "",
            run_name="crash",
        ),
    ]
    return run_in_process(backfill_main, argv, log, {CRASH_AT: point.to_json(), TEST_FAULTS: "1"} if point else {})


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))


def _batches(log: Path) -> list[dict]:
    return [json.loads(line[line.index("{") :]) for line in log.read_text().splitlines() if '"batch_persisted"' in line]


# The whole crash matrix takes about six minutes: TIDEMARK_CRASH_MATRIX=full (or TIDEMARK_FULL_SUITE=1)
# runs it (docs/tests.md, "Crash points"). The suite runs the live job's first and last commits and one
# between: nothing committed yet, one table committed, the ledger. Late and quarantine commit as
# events does, between it and the seals (issue 26 took them out of the suite for time).
FULL_MATRIX = os.environ.get("TIDEMARK_CRASH_MATRIX") == "full" or os.environ.get("TIDEMARK_FULL_SUITE") == "1"
ALL_LIVE_POINTS = ("before_first", "events", "late", "quarantine", "seals", "ledger")
# The seals commit as the ledger does, after the data tables (issue 27 took it out for time).
LIVE_POINTS = ALL_LIVE_POINTS if FULL_MATRIX else ("before_first", "events", "ledger")


@pytest.mark.parametrize("point", LIVE_POINTS)
def test_live_dies_after_a_commit_and_the_next_run_leaves_the_lake_as_one_clean_run(backlog, spark, tmp_path, point):
    """Each point, once with the checkpoint kept and once with it deleted: the two cases start
    from one crash (its folder copied), which saves a crashed run a case."""
    from pyspark.errors import StreamingQueryException

    crashed = tmp_path / "crashed"
    crashed.mkdir()
    conf = _copy(backlog.snapshot, crashed, backlog.bootstrap)
    with pytest.raises(StreamingQueryException, match=f"crash point: after {point} of batch 0"):
        _persist(conf, tmp_path / "crashed.log", CrashPoint(point, 0, "raise"))

    for checkpoint in ("kept", "deleted"):
        folder = tmp_path / checkpoint
        folder.mkdir()
        conf = _copy(crashed, folder, backlog.bootstrap)
        if checkpoint == "deleted":
            shutil.rmtree(folder / "checkpoints" / "telemetry" / "persist")
        log = tmp_path / f"{checkpoint}.log"
        assert _persist(conf, log) == 0, f"checkpoint {checkpoint}: the run after the crash failed"

        first = _batches(log)[0]
        if checkpoint == "kept":
            assert first.get("replayed") is True, "the batch the crash interrupted is replayed from the checkpoint"
        else:
            assert '"resumed_from_ledger"' in log.read_text(), "without a checkpoint the run resumes from the ledger"
        if point not in ("before_first", "ledger") or checkpoint == "kept":
            assert first.get("insert_only") is True, "a batch that may meet its own rows writes insert-only"
        assert_lake_equals_one_clean_run(spark, folder, backlog)


def test_the_batch_holds_every_route_so_each_point_is_reached(backlog, spark):
    """The scenario's own check: phase 2's first batch commits to every table, or a point would
    never be reached and its case would test nothing (they also assert the crash happened)."""
    assert len(_table(backlog.reference, "late")) == 5
    assert len(_table(backlog.reference, "quarantine")) == 1


def test_a_crash_point_outside_tests_is_refused_at_start_up(backlog, tmp_path):
    conf = _copy(backlog.snapshot, tmp_path, backlog.bootstrap)
    code = run_in_process(
        persist_main,
        ["--stream", "telemetry", "--conf", str(conf)],
        tmp_path / "refused.log",
        {CRASH_AT: CrashPoint("events").to_json(), TEST_FAULTS: ""},
    )
    assert code == 2
    assert f"{CRASH_AT} is set but {TEST_FAULTS} is not 1" in (tmp_path / "refused.log").read_text()


# The commits of a recovery and of a backfill into events: the claim, then each batch's MERGEs
# (events, late, quarantine) and its ledger rows. A backfill into a shadow set appends to its
# own tables and claims nothing.
# The suite runs one point of a recovery and one of a shadow backfill (a backfill into events
# dying mid-run, after a ledger commit, is tests/integration/test_backfill.py's); the whole matrix
# runs under TIDEMARK_CRASH_MATRIX=full.
BOUNDED_POINTS = ("claims", "events", "late", "quarantine", "ledger")
SHADOW_POINTS = ("events", "late", "quarantine", "ledger")
RECOVERY_POINTS = BOUNDED_POINTS if FULL_MATRIX else ("events",)
SHADOW_SUITE_POINTS = SHADOW_POINTS if FULL_MATRIX else ("ledger",)
# A backfill into events: its claim (the commit only a bounded writer makes), its first data
# commit and its last; late and quarantine are further data commits of the same batch.
BOUNDED_SUITE_POINTS = BOUNDED_POINTS if FULL_MATRIX else ("claims", "events", "ledger")


@pytest.mark.parametrize("point", RECOVERY_POINTS)
def test_a_recovery_dies_after_a_commit_and_the_next_recovery_restores_exactly_the_lake(
    backlog, spark, tmp_path, point
):
    """A recovery's checkpoint is its own, temporary: the run after a crash always starts afresh
    and finds what the crashed one wrote (insert-only, under the claim it made again)."""
    from pyspark.errors import StreamingQueryException

    conf = _damaged(backlog, tmp_path, spark)
    expected = pytest.raises(StreamingQueryException) if point != "claims" else pytest.raises(BaseException)
    with expected as crashed:
        _recover(conf, backlog, tmp_path / "crashed.log", CrashPoint(point, 0, "raise"))
    assert f"crash point: after {point} of batch 0" in str(crashed.value)

    assert _recover(conf, backlog, tmp_path / "again.log") == 0
    assert_lake_equals_one_clean_run(spark, tmp_path, backlog, step_ids=False)


@pytest.mark.skipif(
    not FULL_MATRIX,
    reason="the whole crash matrix: TIDEMARK_CRASH_MATRIX=full (test_backfill.py crashes one in the suite)",
)
@pytest.mark.parametrize("point", BOUNDED_SUITE_POINTS)
def test_a_backfill_into_events_dies_after_a_commit_and_the_next_run_restores_exactly_the_lake(
    backlog, spark, tmp_path, point
):
    """The same run name resumes the backfill's checkpoint; with it deleted the run reads again."""
    from pyspark.errors import StreamingQueryException

    crashed = tmp_path / "crashed"
    crashed.mkdir()
    conf = _damaged(backlog, crashed, spark)
    with pytest.raises(StreamingQueryException if point != "claims" else BaseException) as failure:
        _backfill(conf, backlog, tmp_path / "crashed.log", "events", CrashPoint(point, 0, "raise"))
    assert f"crash point: after {point} of batch 0" in str(failure.value)

    for checkpoint in ("kept", "deleted"):
        folder = tmp_path / checkpoint
        folder.mkdir()
        conf = _copy(crashed, folder, backlog.bootstrap)
        if checkpoint == "deleted":
            shutil.rmtree(folder / "checkpoints" / "telemetry" / "backfill", ignore_errors=True)
        assert _backfill(conf, backlog, tmp_path / f"{checkpoint}.log", "events") == 0, f"checkpoint {checkpoint}"
        assert_lake_equals_one_clean_run(spark, folder, backlog, step_ids=False)


@pytest.mark.parametrize("point", SHADOW_SUITE_POINTS)
def test_a_backfill_into_a_shadow_set_dies_after_a_commit_and_its_resumed_run_equals_live(
    backlog, spark, tmp_path, point
):
    """A shadow set belongs to its run: with the checkpoint kept the run resumes and the set
    equals live; with it deleted a new run is refused (it would append to another run's rows),
    also when the crash came before the set's first ledger commit (it was not, before)."""
    from pyspark.errors import StreamingQueryException

    crashed = tmp_path / "crashed"
    crashed.mkdir()
    conf = _copy(backlog.reference, crashed, backlog.bootstrap)
    with pytest.raises(StreamingQueryException, match=f"crash point: after {point} of batch 0"):
        _backfill(conf, backlog, tmp_path / "crashed.log", "shadow", CrashPoint(point, 0, "raise"))

    kept = tmp_path / "kept"
    kept.mkdir()
    assert _backfill(_copy(crashed, kept, backlog.bootstrap), backlog, tmp_path / "kept.log", "shadow") == 0
    assert_lake_equals_one_clean_run(spark, kept, backlog, shadow="crash", step_ids=False)

    deleted = tmp_path / "deleted"
    deleted.mkdir()
    conf = _copy(crashed, deleted, backlog.bootstrap)
    shutil.rmtree(deleted / "checkpoints" / "telemetry" / "backfill")
    before = len(_table(deleted, "events", shadow="crash", columns=KEY))
    assert _backfill(conf, backlog, tmp_path / "deleted.log", "shadow") == 2
    assert "already holds another run's backfill" in (tmp_path / "deleted.log").read_text()
    assert len(_table(deleted, "events", shadow="crash", columns=KEY)) == before, "the refused run wrote nothing"
