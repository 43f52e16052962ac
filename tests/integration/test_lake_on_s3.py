"""Live and recovery as separate drivers on a lake and checkpoints on S3 (the loopback s3proxy):
the incident of issue 36, and the loop that must end without a person when live dies.

The live job runs in its own process; a recovery runs in the test's. The whole chain is on
s3a://: Spark's streaming checkpoint, the live driver's beat beside it, the Delta commits through
tidemark's put-if-absent LogStore, the claims, and the Spark-free readers (delta-rs) with the
storage settings of connectors.lake_storage.

1. The incident: live catches up a backlog on a fresh lake; with its batch 1 planned (paused
   there), a recovery of partition 0's whole range claims. Before issue 36 live died reading
   the claims table the recovery was creating, and the recovery then waited 600 s for live's
   batch and failed. Now the tables were made by live before its first batch, the recovery
   waits while live's driver beats, and both end well.
2. Live dies in a batch (SIGKILL of its driver and JVM right after the batch's events commit),
   and a recovery of partition 1 claims offsets of that batch: it must not wait for a batch that
   will never commit. It yields within seconds (exit 75, a typed result saying why), live is
   restarted and replays the batch without the claimed offsets, and the recovery run again
   writes exactly the claimed offsets nobody wrote.
"""

from __future__ import annotations

import json
import signal
import time
from collections import Counter

import pytest
import yaml

from connectors.jars import ensure_jars, shared_jars_root
from harness.interleaving import ResumeWhenWaiting, pause_at, wait_until_paused
from harness.log_layouts import routed_pairs
from harness.persist_job import produce, run_persist, run_recover, start_persist, telemetry_value, write_stream_config
from tidemark.crash_points import CRASH_AT, TEST_FAULTS, CrashPoint, points_to_json

pytestmark = pytest.mark.integration

PARTITIONS = 2
PER_PARTITION = 250
BUDGET = 100  # about 50 records of each partition a batch
STEP_MS = 1_000
UNDECODABLE_EVERY = 97  # offsets o with o % 97 == 5 are not JSON: quarantined
EXIT_YIELDED = 75


def test_a_recovery_while_live_runs_and_one_after_live_died_end_with_every_record_once(
    kafka_broker, spark, spark_on_loopback_s3, tmp_path
):
    from connectors.lake_storage import open_delta_table
    from spark_jobs.streaming_checkpoint import planned_ranges

    loopback_s3 = spark_on_loopback_s3
    ensure_jars(shared_jars_root(), ["delta"])  # Delta, S3A and the LogStores, for live's JVM
    topic = "live_and_recovery_on_s3"
    kafka_broker.create_topic(topic, PARTITIONS)
    base_ms = int(time.time() * 1000) - PER_PARTITION * STEP_MS - 60_000
    records = []
    for offset in range(PER_PARTITION):
        log_ms = base_ms + offset * STEP_MS
        for p in range(PARTITIONS):
            value = b"not json {" if offset % UNDECODABLE_EVERY == 5 else telemetry_value(f"scooter-{p}", log_ms)
            records.append((p, value, log_ms))
    assert produce(kafka_broker.bootstrap, topic, records) == dict.fromkeys(range(PARTITIONS), PER_PARTITION)
    environment = loopback_s3.lake_environment("live-and-recovery")
    conf = write_stream_config(
        tmp_path, kafka_broker.bootstrap, topic, PARTITIONS, max_records_per_batch=BUDGET, driver_beat_interval="1s"
    )
    document = yaml.safe_load(conf.read_text())
    document["streams"]["telemetry"]["lake"] = {
        "root": environment["TIDEMARK_LAKE_ROOT"],
        "checkpoint_root": environment["TIDEMARK_CHECKPOINT_ROOT"],
    }
    conf.write_text(yaml.safe_dump(document))
    lake = f"{environment['TIDEMARK_LAKE_ROOT'].rstrip('/')}/telemetry"
    checkpoint = f"{environment['TIDEMARK_CHECKPOINT_ROOT'].rstrip('/')}/telemetry/persist"

    paused = pause_at(tmp_path / "pauses", "before_first", 1)
    killed = CrashPoint("events", 3)  # the production action: SIGKILL of the driver and its JVM
    live_log = tmp_path / "live.log"
    live = start_persist(
        conf,
        "--mode",
        "available_now",
        log=live_log,
        environment={**environment, TEST_FAULTS: "1", CRASH_AT: points_to_json((paused, killed))},
    )

    # 1. Batch 1 planned, not decided. Live made every table before its first batch.
    wait_until_paused(paused, live, live_log)
    assert open_delta_table(f"{lake}/claims", environ=environment).version() == 0, "made by live, no claim yet"
    first_end = _ranges(planned_ranges(spark, checkpoint, 1))[0][0]  # partition 0's batch 0 end
    log, result = tmp_path / "recovery-whole.log", tmp_path / "recovery-whole.json"
    with ResumeWhenWaiting(paused, log) as watch:
        code = run_recover(
            conf, 0, f"0-{PER_PARTITION}", log=log, result=result, environment=environment, max_records_per_batch=1000
        )
    assert code == 0, log.read_text()[-3000:]
    assert watch.waited, "the recovery met live's batch 1 in flight and waited for it"
    # Live's batch 0 wrote partition 0's [0, first_end) before the claim; every later batch left
    # partition 0 out: the recovery inserted the rest, counted by its own commits.
    assert json.loads(result.read_text())["inserted"] == PER_PARTITION - first_end

    # 2. Live dies right after batch 3's events commit; its beat falls silent.
    assert live.wait(300) == -signal.SIGKILL, f"live was not killed at its crash point:\n{live_log.read_text()[-3000:]}"
    dead_batch = _ranges(planned_ranges(spark, checkpoint, 3))
    in_flight = dead_batch[1]  # partition 1's range of the batch live died in
    claimed = (in_flight[0] + 2, in_flight[1] + 10)  # its tail, and what the next batch reads
    log, result = tmp_path / "recovery-yields.log", tmp_path / "recovery-yields.json"
    started = time.monotonic()
    code = run_recover(conf, 1, f"{claimed[0]}-{claimed[1]}", log=log, result=result, environment=environment)
    decided_in_s = time.monotonic() - started
    assert code == EXIT_YIELDED, log.read_text()[-3000:]
    outcome = json.loads(result.read_text())
    assert (outcome["outcome"], outcome["yielded"]["live_batch"]) == ("yielded", 3)
    assert outcome["yielded"]["offsets"] == {"1": [[claimed[0], in_flight[1]]]}
    assert "has not beaten" in outcome["yielded"]["reason"], outcome["yielded"]["reason"]
    assert decided_in_s < 30, f"decided in {decided_in_s:.0f} s, not waited out"

    # Airflow's retry of the live task: the same job in this process replays batch 3 insert-only,
    # leaving out what the recovery claimed, and reads on to the end.
    run_persist(conf, "--mode", "available_now", log=tmp_path / "live-again.log", environment=environment)
    replayed = [line for line in _batches(tmp_path / "live-again.log") if line.get("replayed")]
    assert [line["micro_batch_id"] for line in replayed] == [3]
    assert replayed[0]["left_out"] == {"0": [list(dead_batch[0])], "1": [[claimed[0], in_flight[1]]]}

    # The recovery, rescheduled: now it proceeds. The dead batch's events commit holds the
    # claimed offsets it routed to events; its quarantine commit never came.
    log, result = tmp_path / "recovery-again.log", tmp_path / "recovery-again.json"
    assert run_recover(conf, 1, f"{claimed[0]}-{claimed[1]}", log=log, result=result, environment=environment) == 0
    unwritten = [o for o in range(*claimed) if o >= in_flight[1] or o % UNDECODABLE_EVERY == 5]
    assert json.loads(result.read_text())["inserted"] == len(unwritten)

    # Every produced pair once, in the table a clean run routes it to; one ledger row per step
    # and partition for each mode.
    routed = routed_pairs(lake, environment)
    assert {pair: tables for pair, tables in routed.items() if len(tables) > 1} == {}
    assert {pair: tables[0] for pair, tables in routed.items()} == {
        (p, o): ("quarantine" if o % UNDECODABLE_EVERY == 5 else "events")
        for p in range(PARTITIONS)
        for o in range(PER_PARTITION)
    }
    ledger = open_delta_table(f"{lake}/ledger", environ=environment).to_pyarrow_table(
        columns=["step_id", "source_partition", "mode", "writer"]
    )
    rows = Counter(
        zip(ledger["writer"].to_pylist(), ledger["step_id"].to_pylist(), ledger["source_partition"].to_pylist())
    )
    assert max(rows.values()) == 1, "each writer's (step, partition) row once, the replayed batch's included"


def _ranges(planned) -> dict[int, tuple[int, int]]:
    return {r.partition: (r.start_offset, r.end_offset) for r in planned}


def _batches(log) -> list[dict]:
    from harness.persist_job import batches_persisted

    return batches_persisted(log)
