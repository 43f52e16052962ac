"""Alarms through real Airflow to real receivers started by the test (aiosmtpd on loopback, an HTTP
server on loopback): what arrives names the stream and what failed, and carries no credential; a
receiver that is down is a warning and the run still fails; a connection that does not exist
fails parsing naming the key. The quality alarm of a frozen partition (STOP) is asserted in
test_quality_and_recovery_dags.py, on the run that test already makes.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from harness.airflow_process import dags_test_many, run_python
from harness.alarm_receivers import (
    HOOK_LOGIN,
    HOOK_PASSWORD,
    SMTP_LOGIN,
    SMTP_PASSWORD,
    TO_EMAIL,
    AlarmReceivers,
    alarm_receivers,
    alerts_section,
    basic_auth,
    closed_port,
)
from harness.persist_job import produce, telemetry_value

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
CREDENTIALS = (SMTP_LOGIN, SMTP_PASSWORD, HOOK_LOGIN, HOOK_PASSWORD)


def _conf(tmp_path: Path, streams: dict[str, dict | tuple[dict, dict]]) -> Path:
    """streams.yaml with the shipped stream under each name: its alerts, and sections updated."""
    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    shipped = document["streams"]["telemetry"]
    document["streams"] = {}  # only the test's streams
    for name, value in streams.items():
        alerts, updates = value if isinstance(value, tuple) else (value, {})
        stream = json.loads(json.dumps(shipped))
        stream["lake"] = {"root": str(tmp_path / "lake"), "checkpoint_root": str(tmp_path / "checkpoints")}
        stream["alerts"] = alerts
        for section, values in updates.items():
            stream[section].update(values)
        document["streams"][name] = stream
    path = tmp_path / "streams.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


_IMPORT_ERRORS = f"""
import json
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder={str(REPO / "dags")!r})
print(json.dumps({{"errors": {{str(k): v for k, v in bag.import_errors.items()}}, "dag_ids": sorted(bag.dag_ids)}}))
"""


def test_a_connection_that_does_not_exist_fails_parsing_naming_the_key(airflow_environment, tmp_path):
    receivers = AlarmReceivers(closed_port(), closed_port())  # parsing sends nothing: no server needed
    conf = _conf(tmp_path, {"telemetry": alerts_section(http_conn_id="tm_hook_typo")})
    # The SMTP connection exists; the webhook's id in the configuration is a typo of the other.
    environment = {**airflow_environment, **receivers.connections(), "TIDEMARK_CONF": str(conf)}
    parsed = run_python(environment, _IMPORT_ERRORS)
    assert parsed.returncode == 0, parsed.stderr[-3000:]
    found = json.loads(parsed.stdout.strip().splitlines()[-1])
    expected = (
        "AlertConnectionError: streams.telemetry.alerts.webhook.conn_id: Airflow has no connection 'tm_hook_typo'; "
        "add it (airflow connections add tm_hook_typo ..., or the environment variable AIRFLOW_CONN_TM_HOOK_TYPO)"
    )
    failed = {Path(path).name for path, error in found["errors"].items() if expected in error}
    assert failed == {"tidemark_persist.py", "tidemark_quality.py", "tidemark_recover.py", "tidemark_sweep.py"}, found[
        "errors"
    ]
    assert "tidemark_backfill__telemetry" in found["dag_ids"], "files without alarms still load"


def test_a_failed_persist_run_and_a_lost_recovery_alarm_and_a_receiver_that_is_down_hides_nothing(
    airflow_environment, kafka_broker, tmp_path
):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    # The recovery's stream: 30 records in partition 0, the first 20 deleted from the log
    # (retention) before anything persisted them.
    topic = "alarm_lost"
    kafka_broker.create_topic(topic, 1)
    now_ms = int(time.time() * 1000)
    produce(
        kafka_broker.bootstrap,
        topic,
        [(0, telemetry_value("scooter-0", now_ms - 60_000 + i), now_ms) for i in range(30)],
    )
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})
    for future in admin.delete_records([TopicPartition(topic, 0, 20)]).values():
        assert future.result(30).low_watermark == 20

    with alarm_receivers() as receivers:
        down = AlarmReceivers(closed_port(), closed_port())
        # The persist streams cannot start on this machine (a row budget no driver heap here
        # holds): the task fails at start, before spark-submit, without retries, the quickest real
        # failure of the task whose last failed try is the alarm's occasion.
        unstartable = {"persist": {"max_records_per_batch": 1_000_000_000}}
        conf = _conf(
            tmp_path,
            {
                "telemetry": (alerts_section(), unstartable),
                "telemetry_down": (alerts_section("tm_down_smtp", "tm_down_hook"), unstartable),
                "telemetry_lost": (
                    alerts_section(),
                    {"source": {"bootstrap_servers": kafka_broker.bootstrap, "topic": topic, "partitions": 1}},
                ),
            },
        )
        environment = {
            **airflow_environment,
            **receivers.connections(),
            **down.connections("tm_down_smtp", "tm_down_hook"),
            "TIDEMARK_CONF": str(conf),
            "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[1]"}),
        }
        request = {
            "stream": "telemetry_lost",
            "partition": 0,
            "ranges": "0-30",
            "reason": "test: retention overtook it",
        }
        up_run, down_run, recovery = dags_test_many(
            environment,
            [
                ["tidemark_persist__telemetry"],
                ["tidemark_persist__telemetry_down"],
                ["tidemark_recover__telemetry_lost", "--conf", json.dumps(request)],
            ],
        )

    assert up_run.returncode != 0 and down_run.returncode != 0, "a callback never turns a failed run green"
    assert "persist.max_records_per_batch: a batch of 1,000,000,000 records needs about" in up_run.output, (
        up_run.output[-3000:]
    )
    assert recovery.returncode != 0, "offsets LOST fail the recovery"
    persist_mail, lost_mail = receivers.mails
    persist_post, lost_post = receivers.posts

    assert "Subject: [tidemark] telemetry: the persist job failed after 1 tries" in persist_mail.text
    assert f"To: {TO_EMAIL}" in persist_mail.text and "tidemark_persist__telemetry" in persist_mail.text
    assert (
        persist_post.body["kind"],
        persist_post.body["stream"],
        persist_post.body["dag_id"],
        persist_post.body["task_id"],
    ) == (
        "persist_failed",
        "telemetry",
        "tidemark_persist__telemetry",
        "persist",
    )
    assert persist_post.body["details"]["error"] == "AirflowFailException"

    assert "Subject: [tidemark] telemetry_lost: partition 0 LOST" in lost_mail.text
    assert (lost_post.body["kind"], lost_post.body["stream"], lost_post.body["task_id"]) == (
        "recovery_lost",
        "telemetry_lost",
        "recover",
    )
    (finding,) = lost_post.body["partitions"]
    assert (finding["partition"], finding["status"], finding["lost"]) == (0, "LOST", [[0, 20]])
    assert finding["reasons"] == [
        "20 offsets left the log (retention) before they were persisted; 10 records of the recoverable ranges were inserted"
    ]
    assert lost_post.body["details"]["requested"] == [[0, 30]]

    for post in (persist_post, lost_post):
        assert post.authorization == basic_auth(HOOK_LOGIN, HOOK_PASSWORD), "the connection's login went as HTTP auth"
    for secret in CREDENTIALS:
        for message in (persist_mail, lost_mail, persist_post, lost_post):
            assert secret not in message.text

    for key, conn_id in (("alerts.email", "tm_down_smtp"), ("alerts.webhook", "tm_down_hook")):
        assert f"Alarm not delivered to {key} (Airflow connection '{conn_id}')" in down_run.output
    assert "The failure it was about stands" in down_run.output
    for secret in CREDENTIALS:
        assert secret not in down_run.output
