"""AlarmNotifier alone: it hands one Alarm to the providers' notifiers, a receiver that fails is a
warning (never raised, the others still tried), and a missing connection fails naming the key.
The real delivery (aiosmtpd, an HTTP receiver, Airflow) is tests/dags/test_alarms.py's."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tidemark.alert_settings import AlertSettings, EmailReceiver, WebhookReceiver
from tidemark.stream_config import load_streams
from tidemark_airflow import alerts
from tidemark_airflow.alert_message import Alarm, TaskIdentity
from tidemark_airflow.alerts import AlarmNotifier, AlertConnectionError, alarm_callbacks

REPO = Path(__file__).resolve().parents[2]
SETTINGS = AlertSettings(
    email=EmailReceiver("tm_smtp", ("oncall@example.com",), "tidemark@example.com"),
    webhook=WebhookReceiver("tm_hook", "alarm"),
)
ALARM = Alarm("quality", "telemetry", "partition 2 STOP", TaskIdentity("d", "r", "verdict", 1, None))


class _Receiver:
    def __init__(self, error: Exception | None = None):
        self.error, self.contexts = error, []

    def notify(self, context):
        self.contexts.append(context)
        if self.error:
            raise self.error


def test_the_providers_notifiers_get_the_alarm_and_the_configured_receivers():
    notifier = AlarmNotifier(alerts=SETTINGS, build=lambda context: ALARM)
    (email_key, email_conn, email), (hook_key, hook_conn, hook) = notifier._receivers(ALARM)
    assert (email_key, email_conn, type(email).__name__) == ("alerts.email", "tm_smtp", "SmtpNotifier")
    assert (email.to, email.from_email, email.subject, email.smtp_conn_id) == (
        ["oncall@example.com"],
        "tidemark@example.com",
        ALARM.subject,
        "tm_smtp",
    )
    assert email.html_content == ALARM.html()
    assert (hook_key, hook_conn, type(hook).__name__) == ("alerts.webhook", "tm_hook", "HttpNotifier")
    assert (hook.http_conn_id, hook.endpoint, hook.method, hook.json) == ("tm_hook", "alarm", "POST", ALARM.to_json())


def test_a_receiver_that_is_down_is_a_warning_and_the_others_are_still_tried(monkeypatch, capsys):
    down, up = _Receiver(ConnectionRefusedError(111, "Connection refused")), _Receiver()
    notifier = AlarmNotifier(alerts=SETTINGS, build=lambda context: ALARM)
    monkeypatch.setattr(
        notifier, "_receivers", lambda alarm: [("alerts.email", "tm_smtp", down), ("alerts.webhook", "tm_hook", up)]
    )
    notifier.notify({"ti": None})  # does not raise
    assert len(down.contexts) == 1 and len(up.contexts) == 1
    # Airflow's structured log (structlog) writes to stdout in this process.
    (warning,) = [line for line in capsys.readouterr().out.splitlines() if "[warning" in line]
    assert "Alarm not delivered to alerts.email (Airflow connection 'tm_smtp'): ConnectionRefusedError" in warning
    assert "The failure it was about stands" in warning


def test_nothing_is_sent_when_the_occasion_has_nothing_to_say(monkeypatch):
    receiver = _Receiver()
    notifier = AlarmNotifier(alerts=SETTINGS, build=lambda context: None)
    monkeypatch.setattr(notifier, "_receivers", lambda alarm: [("alerts.email", "tm_smtp", receiver)])
    notifier.notify({})
    assert receiver.contexts == []


def _stream(tmp_path, alerts_section):
    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    document["streams"]["telemetry"].pop("alerts", None)  # the shipped alarms go to the loopback inbox
    if alerts_section is not None:
        document["streams"]["telemetry"]["alerts"] = alerts_section
    (tmp_path / "streams.yaml").write_text(yaml.safe_dump(document))
    return load_streams(tmp_path / "streams.yaml", {"TIDEMARK_LAKE_ROOT": "/l", "TIDEMARK_CHECKPOINT_ROOT": "/c"})[
        "telemetry"
    ]


def test_a_missing_connection_fails_naming_the_key(tmp_path, monkeypatch):
    from airflow.sdk import Connection
    from airflow.sdk.exceptions import AirflowNotFoundException

    def get(conn_id):
        if conn_id == "tm_hook_typo":
            raise AirflowNotFoundException(f"The conn_id `{conn_id}` isn't defined")
        return object()

    monkeypatch.setattr(Connection, "get", staticmethod(get))
    monkeypatch.setattr(alerts, "_checked_connections", set())
    stream = _stream(
        tmp_path, {"email": {"conn_id": "tm_smtp", "to": "a@example.com"}, "webhook": {"conn_id": "tm_hook_typo"}}
    )
    with pytest.raises(
        AlertConnectionError,
        match=r"^streams\.telemetry\.alerts\.webhook\.conn_id: Airflow has no connection 'tm_hook_typo'",
    ):
        alarm_callbacks(stream, lambda context: None)
    assert alarm_callbacks(_stream(tmp_path, None), lambda context: None) == [], (
        "no alerts: section, no callbacks, no lookups"
    )


def test_a_webhook_token_in_the_connection_s_url_never_reaches_a_warning(monkeypatch, capsys):
    from airflow.sdk import Connection

    token = "T0001/B0002/sekrit-webhook-token"
    base_url = f"https://hooks.example.com/services/{token}"  # a chat webhook: the URL is the secret
    monkeypatch.setattr(
        Connection,
        "get",
        staticmethod(lambda conn_id: Connection(conn_id=conn_id, conn_type="http", host=base_url, password="pw-1234")),
    )
    down = _Receiver(ConnectionError(f"HTTPSConnectionPool: Max retries exceeded with url: {base_url}/alarm (pw-1234)"))
    notifier = AlarmNotifier(alerts=SETTINGS, build=lambda context: ALARM)
    monkeypatch.setattr(notifier, "_receivers", lambda alarm: [("alerts.webhook", "tm_hook", down)])

    assert notifier.deliver(ALARM, {"ti": None}) == 0

    (warning,) = [line for line in capsys.readouterr().out.splitlines() if "[warning" in line]
    assert "Alarm not delivered to alerts.webhook (Airflow connection 'tm_hook'): ConnectionError" in warning
    assert "hooks.example.com/***/alarm (***)" in warning, "the error is still told, the secrets cut out"
    assert "sekrit" not in warning and "pw-1234" not in warning


def test_a_build_that_gives_several_alarms_sends_each_and_none_sends_nothing(monkeypatch):
    second = Alarm("persist_failed", "fleet_gone", "the persist job failed", ALARM.task)
    sent = []
    notifier = AlarmNotifier(alerts=SETTINGS, build=lambda context: [ALARM, second])
    monkeypatch.setattr(notifier, "deliver", lambda alarm, context: sent.append(alarm.stream))
    notifier.notify({"ti": None})
    assert sent == ["telemetry", "fleet_gone"]

    sent.clear()
    AlarmNotifier(alerts=SETTINGS, build=lambda context: []).notify({"ti": None})
    assert sent == []
