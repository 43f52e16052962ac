"""The loop tidemark exists for, end to end with `airflow dags test`: a partition stalls, the
quality DAG notices and triggers recovery, the recover DAG replays it, and the lake ends up holding
exactly what the log holds. Real broker, spark-submit through the Spark provider, Delta.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from harness.log_layouts import lake_offsets
from harness.airflow_process import dag_run_ids, dags_test
from harness.persist_job import produce, telemetry_value, write_stream_config

pytestmark = pytest.mark.integration

HOUR_MS = 3_600_000


def _records(start_ms: int, partitions: int, per_partition: int, step_ms: int) -> list[tuple[int, bytes, int]]:
    return [
        (p, telemetry_value(f"scooter-{p}-{i % 4}", start_ms + i * step_ms), start_ms + i * step_ms)
        for i in range(per_partition)
        for p in range(partitions)
    ]


def _latest_summary(home: Path) -> dict:
    runs = sorted((home / "reports" / "telemetry" / "runs").glob("*/summary.json"), key=lambda p: p.stat().st_mtime)
    return json.loads(runs[-1].read_text())


def test_a_frozen_partition_is_reported_recovered_and_then_ok(airflow_environment, kafka_broker, spark, tmp_path):
    topic = "dag_quality_loop"
    kafka_broker.create_topic(topic, 3)
    now_ms = int(time.time() * 1000)
    # Three hours of event time, one record a minute per partition: hours seal as G passes them.
    produced = Counter()
    produced.update(produce(kafka_broker.bootstrap, topic, _records(now_ms - 3 * HOUR_MS, 3, 120, 60_000)))
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, 3)
    document = yaml.safe_load(conf.read_text())
    document["streams"]["telemetry"]["quality"] = {"stall_timeout": "5s", "schedule": "*/10 * * * *"}
    conf.write_text(yaml.safe_dump(document))
    home = Path(airflow_environment["TIDEMARK_HOME"])
    environment = {
        **airflow_environment,
        "TIDEMARK_CONF": str(conf),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
    }
    frozen = {**environment, "TIDEMARK_CHAOS_FREEZE": "telemetry:2"}

    # Partition 2 stalls: two persist runs read nothing from it while it keeps producing.
    stalled_at = time.monotonic()
    first = dags_test(frozen, "tidemark_persist__telemetry")
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-4000:]
    assert "chaos_freeze" in first.stdout + first.stderr
    time.sleep(6)  # longer than stall_timeout
    produced.update(produce(kafka_broker.bootstrap, topic, _records(now_ms - HOUR_MS + 1_000, 3, 30, 60_000)))
    second = dags_test(frozen, "tidemark_persist__telemetry")
    assert second.returncode == 0, second.stdout[-4000:] + second.stderr[-4000:]

    # The quality run notices: partition 2 STOP, the others OK; recovery is triggered; the run fails.
    recover_runs_before = dag_run_ids(environment, "tidemark_recover__telemetry")
    quality = dags_test(environment, "tidemark_quality__telemetry")
    detected_s = time.monotonic() - stalled_at
    output = quality.stdout + quality.stderr
    assert quality.returncode != 0, "a stalled partition must fail the quality run"
    assert "partition 2: STOP" in output
    summary = _latest_summary(home)
    statuses = {p["partition"]: p["status"] for p in summary["partitions"]}
    assert statuses == {0: "OK", 1: "OK", 2: "STOP"}
    (request,) = summary["recovery_requests"]
    assert (request["partition"], request["ranges"]) == (2, [[0, produced[2]]])
    assert (home / "reports" / "telemetry" / "runs").exists() and summary["paths"]["summary_html"].endswith("summary.html")
    assert Path(summary["paths"]["summary_html"]).exists()
    assert len(dag_run_ids(environment, "tidemark_recover__telemetry") - recover_runs_before) == 1, "the quality run triggered one recovery"

    # Recovery (as triggered): replays partition 2, re-checks the hours it touched, restarts the live job.
    recovered = dags_test(environment, "tidemark_recover__telemetry", "--conf", json.dumps(request))
    recovered_s = time.monotonic() - stalled_at
    output = recovered.stdout + recovered.stderr
    assert recovered.returncode == 0, output[-6000:]
    assert f"{produced[2]} records inserted" in output
    assert "restart_live" in output

    # The live job, no longer frozen, reads partition 2 too (insert-only where recovery wrote),
    # and the next quality run finds every partition OK.
    assert dags_test(environment, "tidemark_persist__telemetry").returncode == 0
    final = dags_test(environment, "tidemark_quality__telemetry")
    assert final.returncode == 0, (final.stdout + final.stderr)[-6000:]
    assert {p["partition"]: p["status"] for p in _latest_summary(home)["partitions"]} == {0: "OK", 1: "OK", 2: "OK"}
    lake = Path(yaml.safe_load(conf.read_text())["streams"]["telemetry"]["lake"]["root"]) / "telemetry"
    found = lake_offsets(spark, lake)
    assert Counter(found).most_common(1)[0][1] == 1, "a (partition, offset) persisted twice"
    assert set(found) == {(p, o) for p, n in produced.items() for o in range(n)}
    print(f"\nstall detected after {detected_s:.0f} s wall time, recovered after {recovered_s:.0f} s")


def test_malformed_recovery_params_fail_before_any_work_naming_the_param(airflow_environment, tmp_path):
    conf = write_stream_config(tmp_path, "127.0.0.1:9", "unused", 4)
    environment = {**airflow_environment, "TIDEMARK_CONF": str(conf)}
    cases = {
        "partition": {"partition": 9, "ranges": "0-10", "reason": "x"},
        "ranges": {"partition": 1, "ranges": "20-10", "reason": "x"},
        "reason": {"partition": 1, "ranges": "0-10", "reason": ""},
    }
    for param, conf_json in cases.items():
        result = dags_test(environment, "tidemark_recover__telemetry", "--conf", json.dumps(conf_json))
        output = result.stdout + result.stderr
        assert result.returncode != 0
        assert f"param '{param}'" in output, output[-3000:]
        assert "spark-submit" not in output, "nothing may be submitted before the params are valid"
