"""The loop tidemark exists for, end to end with `airflow dags test`: a partition stalls, the
quality DAG notices and triggers recovery, the recover DAG replays it, and the lake ends up holding
exactly what the log holds. Real broker, spark-submit through the Spark provider, Delta.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from harness.airflow_process import dag_runs, dags_test
from harness.alarm_receivers import (
    HOOK_LOGIN,
    HOOK_PASSWORD,
    SMTP_LOGIN,
    SMTP_PASSWORD,
    alerts_section,
)
from harness.log_layouts import lake_offsets
from harness.persist_job import produce, run_persist, telemetry_value, write_stream_config
from harness.quality_run import run_quality, statuses

# The same loop on Kinesis (tests/dags/test_kinesis_quality_loop.py: the same DAGs, eight shards,
# the alarms) runs in the suite; this Kafka one with TIDEMARK_FULL_SUITE=1, for the suite's time
# (docs/tests.md, "Suite time"). Kafka's stall, hole and recovery rules run in the suite without Airflow
# (tests/integration/test_quality_checks.py, test_exactly_once_across_jobs.py).
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        os.environ.get("TIDEMARK_FULL_SUITE") != "1",
        reason="the Kafka quality loop through Airflow: TIDEMARK_FULL_SUITE=1 (the Kinesis loop runs in the suite)",
    ),
]

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


def test_a_frozen_partition_is_reported_recovered_and_then_ok(
    airflow_environment, kafka_broker, spark, tmp_path, receivers
):
    topic = "dag_quality_loop"
    kafka_broker.create_topic(topic, 3)
    now_ms = int(time.time() * 1000)
    # Three hours of event time, one record a minute per partition: hours seal as G passes them.
    produced = Counter()
    produced.update(produce(kafka_broker.bootstrap, topic, _records(now_ms - 3 * HOUR_MS, 3, 120, 60_000)))
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, 3)
    document = yaml.safe_load(conf.read_text())
    document["streams"]["telemetry"]["quality"] = {"stall_timeout": "5s", "schedule": "*/10 * * * *"}
    document["streams"]["telemetry"]["alerts"] = alerts_section()
    conf.write_text(yaml.safe_dump(document))
    home = Path(airflow_environment["TIDEMARK_HOME"])
    environment = {
        **airflow_environment,
        "TIDEMARK_CONF": str(conf),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        **receivers.connections(),
    }
    freeze = {"TIDEMARK_CHAOS_FREEZE": "telemetry:2"}

    # Partition 2 stalls: two persist runs read nothing from it while it keeps producing. The
    # first goes through Airflow (the chaos switch reaches the job through the operator's
    # spark-submit); the second, the same job, runs in this process.
    stalled_at = time.monotonic()
    first = dags_test({**environment, **freeze}, "tidemark_persist__telemetry")
    assert first.returncode == 0, first.output[-8000:]
    assert "chaos_freeze" in first.output
    time.sleep(6)  # longer than stall_timeout
    produced.update(produce(kafka_broker.bootstrap, topic, _records(now_ms - HOUR_MS + 1_000, 3, 30, 60_000)))
    run_persist(conf, "--mode", "available_now", log=tmp_path / "second_frozen_run.log", environment=freeze)
    assert "chaos_freeze" in (tmp_path / "second_frozen_run.log").read_text()

    # The quality run notices: partition 2 STOP, the others OK; recovery is triggered with exactly
    # partition 2's missing offsets; the run fails.
    recover_runs_before = dag_runs(environment, "tidemark_recover__telemetry")
    quality_started = time.monotonic()
    quality = dags_test(environment, "tidemark_quality__telemetry")
    detected_s = time.monotonic() - stalled_at
    assert quality.returncode != 0, "a stalled partition must fail the quality run"
    assert "partition 2: STOP" in quality.output
    summary = _latest_summary(home)
    statuses = {p["partition"]: p["status"] for p in summary["partitions"]}
    assert statuses == {0: "OK", 1: "OK", 2: "STOP"}
    (request,) = summary["recovery_requests"]
    assert (request["partition"], request["ranges"], request["restart_live"]) == (
        2,
        [{"start": 0, "end": produced[2]}],
        True,
    )
    assert (
        Path(summary["paths"]["summary_html"])
        == home / "reports" / "telemetry" / "runs" / summary["run_name"] / "summary.html"
    )
    assert Path(summary["paths"]["summary_html"]).exists()
    triggered = {
        run_id: conf
        for run_id, conf in dag_runs(environment, "tidemark_recover__telemetry").items()
        if run_id not in recover_runs_before
    }
    assert list(triggered.values()) == [request], "the quality run triggered one recovery, with the request it reported"

    # A person is told, once for the run, by e-mail and by webhook: stream, partition 2, STOP, the
    # summary's path; no credential of either connection in either message.
    (mail,), (post,) = receivers.mails, receivers.posts
    alarmed_s, quality_to_alarm_s = min(mail.at, post.at) - stalled_at, min(mail.at, post.at) - quality_started
    assert "Subject: [tidemark] telemetry: partition 2 STOP" in mail.text
    assert (post.body["kind"], post.body["stream"], post.body["dag_id"]) == (
        "quality",
        "telemetry",
        "tidemark_quality__telemetry",
    )
    assert [(p["partition"], p["status"]) for p in post.body["partitions"]] == [(2, "STOP")]
    assert post.body["partitions"][0]["reasons"] == next(
        p["reasons"] for p in summary["partitions"] if p["partition"] == 2
    )
    assert post.body["summary"] == {"html": summary["paths"]["summary_html"], "json": summary["paths"]["summary_json"]}
    assert summary["paths"]["summary_html"] in mail.text
    for secret in (SMTP_LOGIN, SMTP_PASSWORD, HOOK_LOGIN, HOOK_PASSWORD):
        assert secret not in mail.text and secret not in post.text

    # Recovery (as triggered): replays partition 2, re-checks the hours it touched, restarts the live job.
    persist_runs_before = dag_runs(environment, "tidemark_persist__telemetry")
    recovered = dags_test(environment, "tidemark_recover__telemetry", "--conf", json.dumps(request))
    recovered_s = time.monotonic() - stalled_at
    assert recovered.returncode == 0, recovered.output[-8000:]
    assert f"{produced[2]} records inserted" in recovered.output
    restarted = set(dag_runs(environment, "tidemark_persist__telemetry")) - set(persist_runs_before)
    assert len(restarted) == 1, (
        "the request's restart_live triggered one persist run (the live job was the cause: STOP)"
    )
    assert (len(receivers.mails), len(receivers.posts)) == (1, 1), "a recovery that lost nothing sends no alarm"

    # The live job, no longer frozen, reads partition 2 too (insert-only where recovery wrote),
    # and the next quality run finds every partition OK. Both are the jobs the DAGs submit, run
    # in this process: their Airflow wiring is what the runs above proved.
    run_persist(conf, "--mode", "available_now", log=tmp_path / "live_resumed.log")
    final = _quality_run(conf, home, tmp_path)
    assert final == {0: "OK", 1: "OK", 2: "OK"}
    lake = Path(yaml.safe_load(conf.read_text())["streams"]["telemetry"]["lake"]["root"]) / "telemetry"
    found = lake_offsets(spark, lake)
    assert Counter(found).most_common(1)[0][1] == 1, "a (partition, offset) persisted twice"
    assert set(found) == {(p, o) for p, n in produced.items() for o in range(n)}
    print(
        f"\nstall detected after {detected_s:.0f} s wall time, alarm received after {alarmed_s:.1f} s ({quality_to_alarm_s:.1f} s after the quality run started), recovered after {recovered_s:.0f} s"
    )


def _quality_run(conf: Path, home: Path, tmp_path: Path) -> dict[int, str]:
    """The quality DAG's check job in this process; each partition's status from its result."""
    return statuses(run_quality(conf, home, tmp_path))
