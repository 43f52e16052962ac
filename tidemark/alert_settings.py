"""Where a stream's alarms go: the optional ``alerts:`` section of its configuration.

An alarm is a message to a person, sent when a quality run finds a partition in one of
``ALARM_STATUSES``, when a recovery finds offsets LOST, when the persist job fails its last try,
and (with ``unsealed_hour_after``) when an hour is still not sealed that long after its end.

Receivers are named by Airflow connection ids, never by addresses with secrets in them: the
SMTP connection holds the mail server and its login, the HTTP connection the webhook's base URL
and its authentication. This module only says where; delivery is Airflow's (its notifiers).

    alerts:
      email:
        conn_id: smtp_default          # an Airflow SMTP connection
        to: [oncall@example.com]       # one address or a list
        from: tidemark@example.com     # optional: else the connection's from_email
      webhook:
        conn_id: tidemark_webhook      # an Airflow HTTP connection (its host is the base URL)
        endpoint: hooks/tidemark       # optional path below the connection's base URL
      unsealed_hour_after: 2h          # optional: no such alarm when unset
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# Quality statuses that send an alarm: reading stopped or data is missing. LAGGING and WARN are
# shown in the reports only (a person is not woken for a slow partition).
ALARM_STATUSES = ("STALL", "STOP", "HOLE", "LOST")

# Airflow's own rule for connection ids (letters, digits, '_', '.', '-').
_CONN_ID = re.compile(r"^[\w.-]{1,250}$")
_EMAIL = re.compile(r"^[^@\s,;<>]+@[^@\s,;<>]+\.[^@\s,;<>]+$")


@dataclass(frozen=True)
class EmailReceiver:
    conn_id: str  # Airflow SMTP connection
    to: tuple[str, ...]
    from_email: str | None  # None: the connection's from_email


@dataclass(frozen=True)
class WebhookReceiver:
    conn_id: str  # Airflow HTTP connection: host (and schema, port) make the base URL
    endpoint: str  # path below the base URL; "" posts to the base URL itself


@dataclass(frozen=True)
class AlertSettings:
    """The receivers of one stream's alarms; at least one of ``email`` and ``webhook``.

    ``unsealed_hour_after_ms``: an event-time hour [H, H + 1h) must be sealed by wall-clock
    time H + 1h + this (ms); the quality run's schedule checks it, so an alarm comes at most one
    quality interval after that moment. None: not checked.
    """

    email: EmailReceiver | None = None
    webhook: WebhookReceiver | None = None
    unsealed_hour_after_ms: int | None = None

    def connections(self) -> tuple[tuple[str, str], ...]:
        """(configuration key, connection id) of every receiver, for messages about a missing one."""
        named = []
        if self.email:
            named.append(("alerts.email.conn_id", self.email.conn_id))
        if self.webhook:
            named.append(("alerts.webhook.conn_id", self.webhook.conn_id))
        return tuple(named)


def parse_alerts(section: Any) -> AlertSettings:
    """The ``alerts:`` section, read through stream_config's key-path-aware section reader
    (``fail`` raises StreamConfigError naming ``streams.<name>.alerts.<key>``)."""
    _only(section, ("email", "webhook", "unsealed_hour_after"))
    email = _parse_email(section.optional_section("email")) if section.has("email") else None
    webhook = _parse_webhook(section.optional_section("webhook")) if section.has("webhook") else None
    unsealed = section.duration("unsealed_hour_after", minimum_ms=1) if section.has("unsealed_hour_after") else None
    if email is None and webhook is None:
        section.fail("", "name at least one receiver: an 'email:' (Airflow SMTP connection) or a 'webhook:' (Airflow HTTP connection)")
    return AlertSettings(email, webhook, unsealed)


def _parse_email(section: Any) -> EmailReceiver:
    _only(section, ("conn_id", "to", "from"))
    conn_id = _conn_id(section, "smtp_default")
    to = section.text_list("to")
    for address in to:
        if not _EMAIL.match(address):
            section.fail("to", f"{address!r} is not an e-mail address like oncall@example.com")
    from_email = section.text("from") if section.has("from") else None
    if from_email is not None and not _EMAIL.match(from_email):
        section.fail("from", f"{from_email!r} is not an e-mail address like tidemark@example.com")
    return EmailReceiver(conn_id, to, from_email)


def _parse_webhook(section: Any) -> WebhookReceiver:
    _only(section, ("conn_id", "endpoint"))
    conn_id = _conn_id(section, None)
    endpoint = section.text("endpoint") if section.has("endpoint") else ""
    if "://" in endpoint:
        section.fail("endpoint", "a path below the connection's base URL; put the URL's host in the Airflow connection")
    return WebhookReceiver(conn_id, endpoint.lstrip("/"))


def _conn_id(section: Any, default: str | None) -> str:
    conn_id = section.text("conn_id", default=default)
    if not _CONN_ID.match(conn_id):
        section.fail("conn_id", f"{conn_id!r} is not an Airflow connection id (letters, digits, '_', '.', '-')")
    return conn_id


def _only(section: Any, known: tuple[str, ...]) -> None:
    """Fail on the first key that is not one of ``known`` (optional keys may be absent)."""
    for key in sorted(section.keys()):
        if key not in known:
            section.fail(key, f"unknown key; expected one of {', '.join(sorted(known))}")
