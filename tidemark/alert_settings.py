"""Where a stream's alarms go: the optional ``alerts:`` section of its configuration.

An alarm is a message to a person, sent when a quality run finds a partition entering one of
``ALARM_STATUSES`` (then at most one reminder per ``remind_every`` while it stays, and one
"resolved" when it leaves them: tidemark.alarm_memory), when a recovery finds offsets LOST, when the persist job fails its last try,
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
      remind_every: 4h                 # optional: a lasting alarm's reminder at most this often; never: none

The section is part of the stream configuration's typed contract (tidemark.stream_config): the
types below are what tidemark.config_document decodes it into, and their rules fail loading
naming ``streams.<name>.alerts.<key>``.
"""

from __future__ import annotations

import re
from typing import Annotated

import msgspec

from tidemark.config_values import ConfigRuleError, PositiveMilliseconds, positive_duration_ms, written_as

# Quality statuses that send an alarm: reading stopped or data is missing. LAGGING and WARN are
# shown in the reports only (a person is not woken for a slow partition).
ALARM_STATUSES = ("STALL", "STOP", "HOLE", "LOST")

# Alertmanager's repeat_interval default: a lasting alarm is recalled, not repeated every run.
DEFAULT_REMIND_EVERY_MS = 4 * 3_600_000

_EMAIL = re.compile(r"^[^@\s,;<>]+@[^@\s,;<>]+\.[^@\s,;<>]+$")


_CONN_ID = re.compile(r"^[\w.-]{1,250}$")


def connection_id(raw: object) -> str:
    """An Airflow connection id (Airflow's own rule: letters, digits, '_', '.', '-')."""
    if not isinstance(raw, str) or not _CONN_ID.match(raw):
        raise ValueError(f"{raw!r} is not an Airflow connection id (letters, digits, '_', '.', '-')")
    return raw


def email_address(raw: object) -> str:
    """One e-mail address like oncall@example.com (no display name, no list)."""
    if not isinstance(raw, str) or not _EMAIL.match(raw):
        raise ValueError(f"{raw!r} is not an e-mail address like tidemark@example.com")
    return raw


def recipients(raw: object) -> tuple[str, ...]:
    """Who receives the mail: one address or a list of them, written either way in the file."""
    items = raw if isinstance(raw, list) else [raw]
    if not items or not all(isinstance(item, str) and item for item in items):
        raise ValueError(f"expected a non-empty string or a list of them, got {raw!r}")
    for address in items:
        if not _EMAIL.match(address):
            raise ValueError(f"{address!r} is not an e-mail address like oncall@example.com")
    return tuple(items)


def endpoint_path(raw: object) -> str:
    """A path below an HTTP connection's base URL ('' is the base URL itself); a leading '/' is dropped."""
    if not isinstance(raw, str):
        raise ValueError(f"expected a path like hooks/tidemark, got {raw!r}")
    if "://" in raw:
        raise ValueError("a path below the connection's base URL; put the URL's host in the Airflow connection")
    return raw.lstrip("/")


def reminder_interval_ms(raw: object) -> int | None:
    """How often a lasting alarm is recalled: a duration ('4h', '30m'), or 'never' (None)."""
    if raw == "never":
        return None
    return positive_duration_ms(raw)


ConnectionId = Annotated[str, msgspec.Meta(extra=written_as(connection_id))]
EmailAddress = Annotated[str, msgspec.Meta(extra=written_as(email_address))]
Recipients = Annotated[tuple[str, ...], msgspec.Meta(extra=written_as(recipients))]
EndpointPath = Annotated[str, msgspec.Meta(extra=written_as(endpoint_path))]
ReminderInterval = Annotated[int, msgspec.Meta(ge=1, extra=written_as(reminder_interval_ms))]


class EmailReceiver(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Alarms sent by mail through an Airflow SMTP connection."""

    conn_id: ConnectionId = "smtp_default"  # Airflow SMTP connection
    # Required; the default only keeps the positional order (conn_id, to, from_email).
    to: Recipients = ()
    from_email: EmailAddress | None = msgspec.field(default=None, name="from")  # None: the connection's from_email

    def __post_init__(self):
        if not self.to:
            raise ConfigRuleError("to", "missing required key")


class WebhookReceiver(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Alarms posted as JSON through an Airflow HTTP connection."""

    conn_id: ConnectionId  # Airflow HTTP connection: host (and schema, port) make the base URL
    endpoint: EndpointPath = ""  # path below the base URL; "" posts to the base URL itself


class AlertSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The receivers of one stream's alarms; at least one of ``email`` and ``webhook``.

    ``unsealed_hour_after_ms``: an event-time hour [H, H + 1h) must be sealed by wall-clock
    time H + 1h + this (ms); the quality run's schedule checks it, so an alarm comes at most one
    quality interval after that moment. None: not checked.

    ``remind_every_ms``: a partition that stays in an alarm status gets a reminder at most this
    often (ms); None ('never' in the file): only the first message and the "resolved" one.
    """

    # Alarms by mail; None: none.
    email: EmailReceiver | None = None
    # Alarms posted as JSON to a webhook; None: none.
    webhook: WebhookReceiver | None = None
    # An hour not sealed this long after its end sends an alarm; None: not checked.
    unsealed_hour_after_ms: PositiveMilliseconds | None = msgspec.field(default=None, name="unsealed_hour_after")
    # A partition that stays in an alarm status is recalled at most this often; None: never.
    remind_every_ms: ReminderInterval | None = msgspec.field(default=DEFAULT_REMIND_EVERY_MS, name="remind_every")

    def __post_init__(self):
        if self.email is None and self.webhook is None:
            raise ConfigRuleError(
                "",
                "name at least one receiver: an 'email:' (Airflow SMTP connection) or a 'webhook:' (Airflow HTTP connection)",
            )

    def connections(self) -> tuple[tuple[str, str], ...]:
        """(configuration key, connection id) of every receiver, for messages about a missing one."""
        named = []
        if self.email:
            named.append(("alerts.email.conn_id", self.email.conn_id))
        if self.webhook:
            named.append(("alerts.webhook.conn_id", self.webhook.conn_id))
        return tuple(named)
