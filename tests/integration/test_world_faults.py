"""Faults of the world, not of tidemark (issue 25, section 3), against real brokers, Spark and Delta.

- Retention overtakes the live job: a partition's next records are deleted (DeleteRecords)
  before the job reads them. The job never skips them: it stops naming the
  partition and the exact offsets, every later run (with its checkpoint, or resumed from the
  ledger without one) stops the same way, nothing past them is read, and the quality run
  reports them LOST with those offsets, until the loss is accepted (``tidemark accept-lost``):
  then the job passes over exactly that range, the checks show the acceptance, and a second loss
  after it stops the job again and is reported LOST.
- The broker stops for longer than a look-up's 30 s timeout and restarts under a continuous
  persist job: on a broker of the test's own
  (never the session's), the job rides it out, and the lake holds every record exactly once.

Expected values are derived from what the test produced and deleted.
"""

from __future__ import annotations

import shutil
import time

import pytest

from harness.persist_job import (
    committed_versions,
    produce,
    run_in_process,
    run_persist,
    telemetry_value,
    write_stream_config,
)

pytestmark = pytest.mark.integration

MINUTE_MS = 60_000


def _records(partition: int, first: int, count: int, now_ms: int) -> list:
    """``count`` records for ``partition``, one a second of event time, ending a minute ago."""
    start = now_ms - MINUTE_MS - 3_600_000
    return [
        (partition, telemetry_value(f"scooter-{partition}", start + i * 1_000), start + i * 1_000)
        for i in range(first, first + count)
    ]


def _persist_failure(conf, log) -> str:
    """Run the persist job in this process, expecting it to stop for offsets lost to retention
    (exit 3); what it printed."""
    from spark_jobs.persist.job import EXIT_LOST, main

    code = run_in_process(main, ["--stream", "telemetry", "--conf", str(conf), "--mode", "available_now"], log)
    assert code == EXIT_LOST, f"the persist job exited {code}, not {EXIT_LOST} (offsets lost)"
    return log.read_text()


def test_retention_overtaking_a_partition_stops_every_run_until_the_loss_is_accepted_and_never_hides_a_second(
    kafka_broker, spark, tmp_path
):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    from expectations.delta_lake_facts import DeltaLakeFacts
    from expectations.quality_run import read_log_bounds, run_quality
    from expectations.quality_status import QualityStatus
    from spark_jobs.replay.accept_lost import main as accept_lost_main
    from tidemark.accepted_loss import AcceptLostRequest, AcceptLostResult
    from tidemark.stream_config import load_stream

    topic = "world_retention"
    kafka_broker.create_topic(topic, 2)
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, 2)
    lake = tmp_path / "lake" / "telemetry"
    now_ms = int(time.time() * 1000)

    # Partition 0 read to 100, partition 1 to 40; then 60 more records reach partition 1 while
    # nothing reads it (between two runs; a frozen reader looks the same to the next plan: its
    # position stays where it was while the log grows).
    produce(kafka_broker.bootstrap, topic, _records(0, 0, 100, now_ms) + _records(1, 0, 40, now_ms))
    run_persist(conf, "--mode", "available_now", log=tmp_path / "persist-1.log")
    produce(kafka_broker.bootstrap, topic, _records(1, 40, 60, now_ms))
    assert _ledger_ends(spark, lake) == {0: 100, 1: 40}

    # Retention overtakes it: offsets [40, 70) of partition 1 are deleted before they are read.
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})
    for future in admin.delete_records([TopicPartition(topic, 1, 70)]).values():
        assert future.result(30).low_watermark == 70
    versions_before = {table: committed_versions(lake / table) for table in ("events", "ledger", "seals")}

    lost = "partition 1: offsets [40, 70) (30 offsets) were deleted from the log before they were read"
    # The run stops in planning (its checkpoint says partition 1 reads next at 40), before a batch.
    first = _persist_failure(conf, tmp_path / "persist-3.log")
    assert lost in first, first
    # A later run has not moved past the loss either: without its checkpoint, it resumes from
    # the ledger, whose position is still 40, and stops the same way.
    shutil.rmtree(tmp_path / "checkpoints")
    assert lost in _persist_failure(conf, tmp_path / "persist-4.log")

    # Nothing was written by the failed runs, and nothing past the loss was read: partition 1
    # holds exactly offsets 0..39.
    assert {table: committed_versions(lake / table) for table in versions_before} == versions_before
    assert _ledger_ends(spark, lake) == {0: 100, 1: 40}
    offsets = (
        spark.read.format("delta").load(str(lake / "events")).where("source_partition = 1").select("source_offset")
    )
    assert sorted(row.source_offset for row in offsets.collect()) == list(range(40))

    # The quality run (stream-wide checks only) reports them LOST, with those offsets.
    stream = load_stream(conf, "telemetry")
    result = run_quality(
        DeltaLakeFacts(stream),
        stream,
        [],
        read_log_bounds(stream),
        int(time.time() * 1000),
        tmp_path / "reports",
        tmp_path / "gx",
        "retention-1",
    )
    partition_1 = result.partition(1)
    assert partition_1.status is QualityStatus.LOST
    assert [(r.start, r.end) for r in partition_1.lost] == [(40, 70)]
    assert result.partition(0).status is not QualityStatus.LOST

    # Issue 40, item 2: the loss is accepted. A range that is not the loss is refused with nothing
    # written; accept-lost writes exactly one ledger row for [40, 70) with who and when; the next
    # run passes over exactly that range and persists every later record once; the quality run
    # shows the accepted loss, not LOST; a second deletion, after it, stops the job again and is
    # reported LOST.
    def delete_below(offset: int) -> None:
        for future in admin.delete_records([TopicPartition(topic, 1, offset)]).values():
            assert future.result(30).low_watermark == offset

    def accept(start: int, end: int, log_name: str) -> tuple[int, str]:
        request = AcceptLostRequest("telemetry", 1, start, end, "alice", "broker disk replaced, copy gone")
        result = tmp_path / f"{log_name}.json"
        argv = ["--conf", str(conf), "--request", request.encode(), "--result", str(result)]
        code = run_in_process(accept_lost_main, argv, tmp_path / f"{log_name}.log")
        return code, (tmp_path / f"{log_name}.log").read_text()

    def quality(run_name: str):
        stream = load_stream(conf, "telemetry")
        bounds = read_log_bounds(stream)
        return run_quality(
            DeltaLakeFacts(stream),
            stream,
            [],
            bounds,
            int(time.time() * 1000),
            tmp_path / "r",
            tmp_path / "gx",
            run_name,
        )

    # Not the loss: refused before any write (exit 2), naming what is lost and what to accept.
    ledger_versions = committed_versions(lake / "ledger")
    code, said = accept(41, 70, "refused")
    assert code == 2, said
    assert "accept --range 40-70" in said, said
    code, said = accept(40, 71, "refused-2")
    assert code == 2 and "accept --range 40-70" in said, said
    assert committed_versions(lake / "ledger") == ledger_versions

    before_ms = int(time.time() * 1000)
    code, said = accept(40, 70, "accepted")
    assert code == 0, said
    result = AcceptLostResult.decode((tmp_path / "accepted.json").read_bytes())
    assert (result.partition, result.start, result.end, result.accepted_by, result.written) == (
        1,
        40,
        70,
        "alice",
        True,
    )
    ledger = spark.read.format("delta").load(str(lake / "ledger"))
    accepted_rows = ledger.where("mode = 'accepted_loss'").collect()
    assert len(accepted_rows) == 1
    row = accepted_rows[0]
    assert (row.source_partition, row.start_offset, row.end_offset, row.records, row.data_records) == (
        1,
        40,
        70,
        0,
        None,
    )
    assert (row.partition_status, row.writer) == ("LOST", "tidemark:telemetry:accepted_loss:alice")
    assert before_ms <= int(row.read_time.timestamp() * 1000) <= int(time.time() * 1000)
    # The same request again writes nothing twice.
    assert accept(40, 70, "again")[0] == 0
    assert AcceptLostResult.decode((tmp_path / "again.json").read_bytes()).written is False
    assert spark.read.format("delta").load(str(lake / "ledger")).where("mode = 'accepted_loss'").count() == 1

    # The live job (at 40) passes over exactly [40, 70), then reads 70..99 once.
    run_persist(conf, "--mode", "available_now", log=tmp_path / "persist-5.log")
    events = spark.read.format("delta").load(str(lake / "events"))
    offsets = sorted(r.source_offset for r in events.where("source_partition = 1").select("source_offset").collect())
    assert offsets == list(range(40)) + list(range(70, 100))
    ledger_rows = spark.read.format("delta").load(str(lake / "ledger"))
    passed = ledger_rows.where(
        "mode = 'live' AND source_partition = 1 AND start_offset = 40 AND end_offset > 40"
    ).collect()
    assert [(r.end_offset, r.records, r.data_records, r.slicing) for r in passed] == [(70, 0, 0, "accepted_loss")]
    assert _ledger_ends(spark, lake) == {0: 100, 1: 100}

    # Quality: no alarm, no HOLE, no LOST; the accepted range shown with who and when.
    checked = quality("accepted-1").partition(1)
    assert checked.status is QualityStatus.OK, checked.reasons
    assert checked.lost == () and checked.holes == ()
    assert [(a.start, a.end, a.accepted_by) for a in checked.accepted_lost] == [(40, 70, "alice")]
    assert "offsets [40, 70) accepted as lost by alice" in checked.reason

    # A second loss after it is never hidden: the job stops and the checks say LOST.
    produce(kafka_broker.bootstrap, topic, _records(1, 100, 20, now_ms))
    delete_below(110)
    second = _persist_failure(conf, tmp_path / "p6.log")
    assert "partition 1: offsets [100, 110) (10 offsets) were deleted" in second, second
    checked = quality("accepted-2").partition(1)
    assert checked.status is QualityStatus.LOST
    assert [(r.start, r.end) for r in checked.lost] == [(100, 110)]
    assert [(a.start, a.end) for a in checked.accepted_lost] == [(40, 70)]


def _ledger_ends(spark, lake) -> dict[int, int]:
    rows = spark.read.format("delta").load(str(lake / "ledger")).groupBy("source_partition").max("end_offset").collect()
    return {row[0]: row[1] for row in rows}


@pytest.fixture
def own_broker(tmp_path):
    """A broker of this test's own (its own ports and folder), to stop and restart: the
    session's broker serves every other test and is never stopped."""
    from connectors.jars import ensure_jars, shared_jars_root
    from stack.kafka_broker import KafkaBroker
    from stack.ports import free_port

    ensure_jars(shared_jars_root(), ["kafka"])

    broker = KafkaBroker(state_dir=tmp_path / "kafka", jars_dir=shared_jars_root(), port=free_port(consecutive=2))
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


def test_a_continuous_job_rides_out_a_broker_restart_and_the_next_run_is_exactly_once(own_broker, spark, tmp_path):
    import threading

    from spark_jobs.persist.job import main

    topic = "world_broker_restart"
    own_broker.create_topic(topic, 2)
    conf = write_stream_config(tmp_path, own_broker.bootstrap, topic, 2, mode="continuous", trigger_interval="1s")
    lake = tmp_path / "lake" / "telemetry"
    now_ms = int(time.time() * 1000)
    produce(own_broker.bootstrap, topic, _records(0, 0, 100, now_ms) + _records(1, 0, 100, now_ms))

    # The continuous job in this process (the broker's restart is the point, not the job's JVM).
    exit_codes = []
    job = threading.Thread(
        target=lambda: exit_codes.append(
            run_in_process(main, ["--stream", "telemetry", "--conf", str(conf)], tmp_path / "continuous.log")
        ),
        daemon=True,
    )
    job.start()
    _wait_for_ledger_ends(spark, lake, {0: 100, 1: 100}, job)

    # The broker goes away for a few triggers, comes back on the same port with its data, and
    # records produced after it returned are persisted by the same run.
    # Longer than a look-up's 30 s timeout: the run must wait for the broker, not give up.
    own_broker.stop()
    time.sleep(35)
    own_broker.start()
    produce(own_broker.bootstrap, topic, _records(0, 100, 50, now_ms) + _records(1, 100, 50, now_ms))
    _wait_for_ledger_ends(spark, lake, {0: 150, 1: 150}, job)
    assert job.is_alive(), f"the continuous job stopped:\n{_tail(tmp_path / 'continuous.log')}"
    for query in spark.streams.active:
        if query.name == "tidemark_live_telemetry":
            query.stop()
    job.join(60)
    assert exit_codes == [0], _tail(tmp_path / "continuous.log")

    # The next run, after more records: every offset exactly once, in events, nowhere twice.
    produce(own_broker.bootstrap, topic, _records(0, 150, 10, now_ms) + _records(1, 150, 10, now_ms))
    run_persist(conf, "--mode", "available_now", log=tmp_path / "next.log")
    events = spark.read.format("delta").load(str(lake / "events"))
    offsets = sorted(
        (row.source_partition, row.source_offset)
        for row in events.select("source_partition", "source_offset").collect()
    )
    assert offsets == [(p, o) for p in (0, 1) for o in range(160)]
    assert _ledger_ends(spark, lake) == {0: 160, 1: 160}


def _wait_for_ledger_ends(spark, lake, ends: dict[int, int], job, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert job.is_alive(), "the continuous job stopped"
        if committed_versions(lake / "ledger") > 1 and _ledger_ends(spark, lake) == ends:
            return
        time.sleep(0.5)
    raise AssertionError(f"the ledger did not reach {ends} within {timeout_s:.0f} s: {_ledger_ends(spark, lake)}")


def _tail(path, lines: int = 30) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else "(no log)"
