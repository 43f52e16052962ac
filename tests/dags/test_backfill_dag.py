"""The daily reconciliation end to end with `airflow dags test`: live misses records, the backfill
DAG re-reads the range into a shadow set, lists the partition-hours that differ, triggers the
recovery DAG for exactly the missing offsets, and fails. Real broker, spark-submit, Delta.

The topic is on the broker's SASL_SSL listener (SCRAM-SHA-512), its settings in a ``kafka``
Airflow connection: the backfill's planner (the log's time index), its executors and the
recovery trigger read it as a deployment would; the password is in no task log and no file."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from unittest import mock

import pytest
from pyspark.sql import functions as F

from harness.airflow_process import dag_runs, dags_test
from harness.persist_job import produce, telemetry_value, write_stream_config
from harness.secret_search import SecretSearch
from harness.secured_kafka import scram

pytestmark = pytest.mark.integration

HOUR_MS = 3_600_000


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))


def test_the_reconciliation_lists_what_live_lacks_triggers_recovery_for_it_and_fails(
    airflow_environment, kafka_broker, spark, tmp_path
):
    from delta.tables import DeltaTable

    from spark_jobs.persist.job import run_persist
    from tidemark.stream_config import load_stream

    topic = "dag_backfill_reconcile"
    kafka_broker.create_topic(topic, 2)
    base = (int(time.time() * 1000) // HOUR_MS - 3) * HOUR_MS
    records = [
        (p, telemetry_value(f"scooter-{p}", t), t) for t in range(base, base + 2 * HOUR_MS, 60_000) for p in range(2)
    ]
    secured = scram(kafka_broker)
    produce(secured.bootstrap, topic, records, secured.settings)
    conf = write_stream_config(tmp_path, secured.bootstrap, topic, 2, kafka_conn_id=secured.conn_id)
    with mock.patch.dict(os.environ, secured.process_environment()):
        run_persist(load_stream(conf, "telemetry"), "available_now", 100_000)
    # Live lost seven records of partition 1 in the second hour (offsets 70-76).
    events = str(tmp_path / "lake" / "telemetry" / "events")
    DeltaTable.forPath(spark, events).delete((F.col("source_partition") == 1) & F.col("source_offset").between(70, 76))

    environment = {
        **airflow_environment,
        **secured.airflow_environment(),
        "TIDEMARK_CONF": str(conf),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
    }
    params = {"start": _iso(base), "end": _iso(base + 2 * HOUR_MS), "target": "shadow", "shadow_name": "reconcile"}
    recover_runs_before = dag_runs(environment, "tidemark_recover__telemetry")
    result = dags_test(environment, "tidemark_backfill__telemetry", "--conf", json.dumps(params))
    output = result.output
    assert result.returncode != 0, "a backfill that differs from live must fail the run"
    second_hour = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime((base + HOUR_MS) / 1000))
    assert (
        f"differs from live in 1 partition-hours: partition 1, hour {second_hour}: live 53, backfill 60 (7 missing in live)"
        in output
    ), output[-6000:]
    triggered = [
        conf
        for run_id, conf in dag_runs(environment, "tidemark_recover__telemetry").items()
        if run_id not in recover_runs_before
    ]
    assert [(conf["partition"], conf["ranges"]) for conf in triggered] == [(1, [{"start": 70, "end": 77}])], (
        "one recovery, of exactly the missing offsets"
    )
    shadow = spark.read.format("delta").load(str(tmp_path / "lake" / "telemetry" / "shadow" / "reconcile" / "events"))
    assert shadow.count() == 240
    search = SecretSearch(secured.secrets(), control=topic)
    search.folders(tmp_path, Path(airflow_environment["AIRFLOW_HOME"])).texts({"task log": output})
    assert search.found == [] and search.controls_found
