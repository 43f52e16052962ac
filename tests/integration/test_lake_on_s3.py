"""The persist job with its lake and its checkpoint on S3 (the loopback s3proxy): killed mid-batch
(its own process, SIGKILLed with its JVM by a crash point right after a batch's events commit,
before its ledger's) and restarted (in this process, on the test session's Spark), it persists
every record exactly once. The whole chain on s3a://: Spark's
streaming checkpoint, the Delta commits through tidemark's put-if-absent LogStore, and the
Spark-free reader (connectors.lake_reader, delta-rs) with the storage settings of
connectors.lake_storage."""

from __future__ import annotations

import signal
import time
from collections import Counter

import pytest
import yaml

from connectors.jars import ensure_jars, shared_jars_root
from harness.persist_job import produce, run_persist, start_persist, telemetry_value, write_stream_config
from tidemark.crash_points import CRASH_AT, TEST_FAULTS, CrashPoint

pytestmark = pytest.mark.integration


def test_killed_mid_run_on_s3_and_restarted_persists_every_record_exactly_once(
    kafka_broker, spark_on_loopback_s3, tmp_path
):
    loopback_s3 = spark_on_loopback_s3
    from connectors.lake_reader import last_global_watermark_ms
    from connectors.lake_storage import open_delta_table
    from tidemark.stream_config import load_stream

    ensure_jars(shared_jars_root(), ["delta"])  # Delta, S3A and the LogStore, for the job's JVM
    topic, partitions, count, budget = "persist_on_s3", 2, 1_500, 500  # three batches: killed in the second
    kafka_broker.create_topic(topic, partitions)
    now_ms = int(time.time() * 1000)
    times = [now_ms - (count - i) * 1_000 for i in range(count)]  # in order, one a second: nothing late
    produced = produce(
        kafka_broker.bootstrap,
        topic,
        [(i % partitions, telemetry_value(f"scooter-{i % 20}", t), t) for i, t in enumerate(times)],
    )
    environment = loopback_s3.lake_environment("lake-on-s3")
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, partitions, max_records_per_batch=budget)
    document = yaml.safe_load(conf.read_text())
    document["streams"]["telemetry"]["lake"] = {
        "root": environment["TIDEMARK_LAKE_ROOT"],
        "checkpoint_root": environment["TIDEMARK_CHECKPOINT_ROOT"],
    }
    conf.write_text(yaml.safe_dump(document))
    stream = load_stream(str(conf), "telemetry")

    crash = {CRASH_AT: CrashPoint("events", batch=1).to_json(), TEST_FAULTS: "1"}  # the production action: SIGKILL
    job = start_persist(
        conf, "--mode", "available_now", log=tmp_path / "first_run.log", environment={**environment, **crash}
    )
    assert job.wait(300) == -signal.SIGKILL, (
        f"the job was not killed at its crash point:\n{(tmp_path / 'first_run.log').read_text()[-3000:]}"
    )
    killed_with = (
        open_delta_table(stream.table_path("events"), environ=environment)
        .to_pyarrow_table(columns=["source_offset"])
        .num_rows
    )
    assert 0 < killed_with < count, f"killed mid-run: {killed_with} of {count} persisted"
    # The restart in this process, on the test session's Spark: the same code, no second JVM start.
    run_persist(conf, "--mode", "available_now", log=tmp_path / "second_run.log", environment=environment)

    events = open_delta_table(stream.table_path("events"), environ=environment).to_pyarrow_table(
        columns=["source_partition", "source_offset"]
    )
    pairs = Counter(zip(events["source_partition"].to_pylist(), events["source_offset"].to_pylist()))
    assert pairs == Counter({(p, offset): 1 for p, total in produced.items() for offset in range(total)})
    ledger = open_delta_table(stream.table_path("ledger"), environ=environment).to_pyarrow_table(
        columns=["step_id", "source_partition", "mode"]
    )
    rows = Counter(zip(ledger["step_id"].to_pylist(), ledger["source_partition"].to_pylist()))
    assert max(rows.values()) == 1, "each (batch, partition) ledger row once, the replayed batch's included"
    with pytest.MonkeyPatch.context() as patch:  # the reader takes its settings from the environment
        for name, value in environment.items():
            patch.setenv(name, value)
        assert last_global_watermark_ms(stream) is not None
