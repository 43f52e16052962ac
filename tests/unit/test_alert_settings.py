"""The ``alerts:`` section of a stream's configuration: optional, typed, and every bad value fails
loading naming its key (tidemark.alert_settings through tidemark.stream_config)."""

from pathlib import Path

import pytest
import yaml

from tidemark.alert_settings import AlertSettings, EmailReceiver, WebhookReceiver
from tidemark.stream_config import StreamConfigError, load_streams

REPO = Path(__file__).resolve().parents[2]
ENV = {"TIDEMARK_LAKE_ROOT": "/lake", "TIDEMARK_CHECKPOINT_ROOT": "/checkpoints"}


def _load_alerts(tmp_path, alerts, environ=ENV):
    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    document["streams"]["telemetry"].pop("alerts", None)  # `...`: the stream without the section
    if alerts is not ...:
        document["streams"]["telemetry"]["alerts"] = alerts
    path = tmp_path / "streams.yaml"
    path.write_text(yaml.safe_dump(document))
    return load_streams(path, environ)["telemetry"].alerts


def test_no_section_means_nobody_is_told(tmp_path):
    assert _load_alerts(tmp_path, ...) is None


def test_a_full_section_is_read_into_typed_receivers(tmp_path):
    alerts = _load_alerts(
        tmp_path,
        {
            "email": {
                "conn_id": "smtp_oncall",
                "to": ["a@example.com", "b@example.org"],
                "from": "tidemark@example.com",
            },
            "webhook": {"conn_id": "tidemark_webhook", "endpoint": "/hooks/tidemark"},
            "unsealed_hour_after": "90m",
            "remind_every": "30m",
        },
    )
    assert alerts == AlertSettings(
        email=EmailReceiver("smtp_oncall", ("a@example.com", "b@example.org"), "tidemark@example.com"),
        webhook=WebhookReceiver("tidemark_webhook", "hooks/tidemark"),
        unsealed_hour_after_ms=90 * 60_000,
        remind_every_ms=30 * 60_000,
    )
    assert alerts.connections() == (
        ("alerts.email.conn_id", "smtp_oncall"),
        ("alerts.webhook.conn_id", "tidemark_webhook"),
    )


def test_defaults_one_address_and_environment_references(tmp_path):
    alerts = _load_alerts(tmp_path, {"email": {"to": "${ONCALL:-ops@example.com}"}})
    assert alerts == AlertSettings(email=EmailReceiver("smtp_default", ("ops@example.com",), None))
    alerts = _load_alerts(tmp_path, {"webhook": {"conn_id": "hook"}}, {**ENV, "ONCALL": "x@y.z"})
    assert alerts == AlertSettings(webhook=WebhookReceiver("hook", ""))
    assert alerts.remind_every_ms == 4 * 3_600_000  # Alertmanager's repeat interval
    alerts = _load_alerts(tmp_path, {"webhook": {"conn_id": "hook"}, "remind_every": "never"})
    assert alerts.remind_every_ms is None  # never reminded


@pytest.mark.parametrize(
    "alerts, message",
    [
        ({}, r"streams\.telemetry\.alerts: name at least one receiver"),
        ({"unsealed_hour_after": "1h"}, r"streams\.telemetry\.alerts: name at least one receiver"),
        (
            {"slack": {"conn_id": "x"}},
            r"streams\.telemetry\.alerts\.slack: unknown key; expected one of email, remind_every, unsealed_hour_after, webhook",
        ),
        ({"email": {"conn_id": "smtp_default"}}, r"streams\.telemetry\.alerts\.email\.to: missing required key"),
        (
            {"email": {"to": []}},
            r"streams\.telemetry\.alerts\.email\.to: expected a non-empty string or a list of them",
        ),
        ({"email": {"to": ["ok@example.com", 7]}}, r"alerts\.email\.to: expected a non-empty string or a list of them"),
        ({"email": {"to": "oncall"}}, r"streams\.telemetry\.alerts\.email\.to: 'oncall' is not an e-mail address"),
        (
            {"email": {"to": "a@example.com, b@example.com"}},
            r"alerts\.email\.to: 'a@example.com, b@example.com' is not an e-mail address",
        ),
        ({"email": {"to": "a@example.com", "from": "me"}}, r"alerts\.email\.from: 'me' is not an e-mail address"),
        (
            {"email": {"to": "a@example.com", "conn_id": "smtp default"}},
            r"alerts\.email\.conn_id: 'smtp default' is not an Airflow connection id",
        ),
        (
            {"email": {"to": "a@example.com", "cc": "b@example.com"}},
            r"alerts\.email\.cc: unknown key; expected one of conn_id, from, to",
        ),
        ({"email": "oncall@example.com"}, r"streams\.telemetry\.alerts\.email: expected a mapping of keys"),
        ({"webhook": {"endpoint": "hooks"}}, r"streams\.telemetry\.alerts\.webhook\.conn_id: missing required key"),
        (
            {"webhook": {"conn_id": "h", "endpoint": "https://hooks.example.com/x"}},
            r"alerts\.webhook\.endpoint: a path below the connection's base URL",
        ),
        (
            {"webhook": {"conn_id": "h"}, "unsealed_hour_after": "0s"},
            r"alerts\.unsealed_hour_after: must be greater than zero",
        ),
        (
            {"webhook": {"conn_id": "h"}, "unsealed_hour_after": 60},
            r"alerts\.unsealed_hour_after: a bare number is ambiguous",
        ),
        (
            {"webhook": {"conn_id": "h"}, "remind_every": "0m"},
            r"alerts\.remind_every: must be greater than zero",
        ),
        ("yes", r"streams\.telemetry\.alerts: expected a mapping of keys"),
    ],
)
def test_a_bad_value_fails_loading_naming_the_key(tmp_path, alerts, message):
    with pytest.raises(StreamConfigError, match=message):
        _load_alerts(tmp_path, alerts)


def test_the_shipped_streams_alarm_the_loopback_inbox_unless_told_otherwise(tmp_path):
    shipped = load_streams(REPO / "conf" / "streams.yaml", ENV)
    inbox = AlertSettings(webhook=WebhookReceiver("tidemark_inbox", "alarms"), remind_every_ms=4 * 3_600_000)
    assert {name: stream.alerts for name, stream in shipped.items()} == {"telemetry": inbox, "rides": inbox}
    elsewhere = load_streams(REPO / "conf" / "streams.yaml", {**ENV, "TIDEMARK_ALARM_WEBHOOK_CONN": "oncall_hook"})
    assert elsewhere["telemetry"].alerts.webhook == WebhookReceiver("oncall_hook", "alarms")


def test_the_commented_lines_of_the_shipped_section_are_valid(tmp_path):
    lines = (REPO / "conf" / "streams.yaml").read_text().splitlines()
    start = lines.index("    alerts:")
    uncommented = []
    for line in lines[start + 1 :]:
        if not line.startswith("      "):
            break
        uncommented.append("      " + line[len("      # ") :] if line.startswith("      # ") else line)
    end = start + 1 + len(uncommented)
    path = tmp_path / "streams.yaml"
    path.write_text("\n".join(lines[: start + 1] + uncommented + lines[end:]) + "\n")
    alerts = load_streams(path, ENV)["telemetry"].alerts
    assert alerts == AlertSettings(
        email=EmailReceiver("smtp_default", ("oncall@example.com",), "tidemark@example.com"),
        webhook=WebhookReceiver("tidemark_inbox", "alarms"),
        unsealed_hour_after_ms=2 * 3_600_000,
        remind_every_ms=4 * 3_600_000,
    )
