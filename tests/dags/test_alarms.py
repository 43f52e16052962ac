"""Alarms through real Airflow to real receivers started by the test (aiosmtpd on loopback, an HTTP
server on loopback): what arrives names the stream and what failed, and carries no credential; a
receiver that is down is a warning and the run still fails; a connection that does not exist
fails parsing naming the key. The quality alarm of a frozen partition (STOP) is asserted in
test_quality_and_recovery_dags.py, on the run that test already makes.
"""

from __future__ import annotations

import json
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

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
CREDENTIALS = (SMTP_LOGIN, SMTP_PASSWORD, HOOK_LOGIN, HOOK_PASSWORD)


def _conf(tmp_path: Path, alerts_by_stream: dict[str, dict]) -> Path:
    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    shipped = document["streams"].pop("telemetry")
    for name, alerts in alerts_by_stream.items():
        stream = json.loads(json.dumps(shipped))
        stream["lake"] = {"root": str(tmp_path / "lake"), "checkpoint_root": str(tmp_path / "checkpoints")}
        stream["alerts"] = alerts
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
    assert failed == {"tidemark_persist.py", "tidemark_quality.py", "tidemark_recover.py"}, found["errors"]
    assert "tidemark_backfill__telemetry" in found["dag_ids"], "files without alarms still load"


def test_a_failed_persist_run_alarms_and_a_receiver_that_is_down_hides_nothing(airflow_environment, tmp_path):
    with alarm_receivers() as receivers:
        down = AlarmReceivers(closed_port(), closed_port())
        conf = _conf(tmp_path, {
            "telemetry": alerts_section(),
            "telemetry_down": alerts_section("tm_down_smtp", "tm_down_hook"),
        })  # fmt: skip
        environment = {
            **airflow_environment, **receivers.connections(), **down.connections("tm_down_smtp", "tm_down_hook"),
            "TIDEMARK_CONF": str(conf),
            # The persist task fails at start, before spark-submit, without retries: the quickest
            # real failure of the task whose last failed try is the alarm's occasion.
            "TIDEMARK_JARS": "",
        }  # fmt: skip
        up_run, down_run = dags_test_many(environment, [["tidemark_persist__telemetry"], ["tidemark_persist__telemetry_down"]])

    assert up_run.returncode != 0 and down_run.returncode != 0, "a callback never turns a failed run green"
    assert "TIDEMARK_JARS is not set" in up_run.output

    (mail,) = receivers.mails
    assert "Subject: [tidemark] telemetry: the persist job failed after 1 tries" in mail.text
    assert f"To: {TO_EMAIL}" in mail.text and "tidemark_persist__telemetry" in mail.text
    (post,) = receivers.posts
    assert (post.body["kind"], post.body["stream"], post.body["dag_id"], post.body["task_id"]) == (
        "persist_failed", "telemetry", "tidemark_persist__telemetry", "persist",
    )  # fmt: skip
    assert post.body["details"]["error"] == "AirflowFailException"
    assert post.authorization == basic_auth(HOOK_LOGIN, HOOK_PASSWORD), "the connection's login went as HTTP auth"
    for secret in CREDENTIALS:
        assert secret not in mail.text and secret not in post.text

    for key, conn_id in (("alerts.email", "tm_down_smtp"), ("alerts.webhook", "tm_down_hook")):
        assert f"Alarm not delivered to {key} (Airflow connection '{conn_id}')" in down_run.output
    assert "The failure it was about stands" in down_run.output
    for secret in CREDENTIALS:
        assert secret not in down_run.output
