"""Alarms through Airflow's notifier mechanism: one ``AlarmNotifier`` per stream and occasion, set
as a task's ``on_failure_callback``; it builds the ``Alarm`` (tidemark_airflow.alert_message) from
the failing task's context and hands it to the providers' own notifiers, ``SmtpNotifier``
(apache-airflow-providers-smtp) and ``HttpNotifier`` (apache-airflow-providers-http), one per
receiver the stream's ``alerts:`` names. tidemark writes no SMTP or HTTP client code.

Contract:
- A receiver that is down, refuses or times out is logged as a WARNING naming the receiver's
  key and connection id; the other receivers are still tried, and the task's own failure, the
  one the alarm was about, stands (a callback never changes a task's state).
- When the DAG file is parsed, every connection the section names must exist, or parsing fails
  naming the key (``streams.<stream>.alerts.email.conn_id``): a typo shows as a DAG import error
  in the UI the moment it is made, not as a silent night. The lookup goes through Airflow's
  secrets backends (environment first, then the metadata database), once per connection id
  per parsing process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from airflow.sdk.bases.notifier import BaseNotifier

from tidemark.alert_settings import AlertSettings
from tidemark.stream_config import StreamConfig
from tidemark_airflow.alert_message import Alarm, TaskIdentity

# How long one receiver may take to accept an alarm (s): a hung webhook must not hang the task.
RECEIVER_TIMEOUT_S = 30

_checked_connections: set[str] = set()


class AlertConnectionError(ValueError):
    """An ``alerts:`` section names an Airflow connection that does not exist."""


class AlarmNotifier(BaseNotifier):
    """Sends ``build(context)`` (an Alarm, or None for nothing to say) to every receiver of
    ``alerts``. Delivery failures are warnings; they are never raised (see the module)."""

    def __init__(
        self, *, alerts: AlertSettings, build: Callable[[Any], Alarm | list[Alarm] | None], **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.alerts = alerts
        self.build = build

    def notify(self, context: Any) -> None:
        built = self.build(context)
        alarms = [built] if isinstance(built, Alarm) else list(built or ())
        if not alarms:
            self.log.info("No alarm to send: nothing the stream's alerts are for")
        for alarm in alarms:  # a family's verdict: one alarm per member that failed
            self.deliver(alarm, context)

    def deliver(self, alarm: Alarm, context: Any) -> int:
        """Send ``alarm`` to every receiver; the number that accepted it. Never raises."""
        delivered = 0
        for key, conn_id, receiver in self._receivers(alarm):
            secrets = receiver_secrets(conn_id)
            try:
                receiver.notify(context)
            except Exception as error:  # noqa: BLE001 - any failure of a receiver is reported, none raised
                # A webhook's token may sit in its URL, which the error repeats: cut it out.
                self.log.warning(
                    "Alarm not delivered to %s (Airflow connection %r): %s: %s. The failure it was about stands; "
                    "see this task's state and log.",
                    key,
                    conn_id,
                    type(error).__name__,
                    redacted(str(error), secrets),
                )
            else:
                delivered += 1
                self.log.info(
                    "Alarm %r for stream %s sent to %s (Airflow connection %r)",
                    alarm.subject,
                    alarm.stream,
                    key,
                    conn_id,
                )
        return delivered

    def _receivers(self, alarm: Alarm) -> list[tuple[str, str, BaseNotifier]]:
        receivers: list[tuple[str, str, BaseNotifier]] = []
        if self.alerts.email:
            from airflow.providers.smtp.notifications.smtp import SmtpNotifier

            email = self.alerts.email
            notifier = SmtpNotifier(
                to=list(email.to),
                from_email=email.from_email,
                subject=alarm.subject,
                html_content=alarm.html(),
                smtp_conn_id=email.conn_id,
            )
            receivers.append(("alerts.email", email.conn_id, notifier))
        if self.alerts.webhook:
            from airflow.providers.http.notifications.http import HttpNotifier

            webhook = self.alerts.webhook
            notifier = HttpNotifier(
                http_conn_id=webhook.conn_id,
                endpoint=webhook.endpoint,
                method="POST",
                json=alarm.to_json(),
                headers={"Content-Type": "application/json"},
                extra_options={"timeout": RECEIVER_TIMEOUT_S},
            )
            receivers.append(("alerts.webhook", webhook.conn_id, notifier))
        return receivers


def alarm_callbacks(stream: StreamConfig, build: Callable[[Any], Alarm | list[Alarm] | None]) -> list[AlarmNotifier]:
    """The ``on_failure_callback`` list for one of ``stream``'s tasks: empty without ``alerts:``.

    Called while the DAG file is parsed; raises AlertConnectionError naming the key when a
    connection the section names does not exist.
    """
    if stream.alerts is None:
        return []
    check_alert_connections(stream)
    return [AlarmNotifier(alerts=stream.alerts, build=build)]


def check_alert_connections(stream: StreamConfig) -> None:
    """Fail naming ``streams.<stream>.alerts.<receiver>.conn_id`` for a connection Airflow lacks."""
    from airflow.sdk import Connection
    from airflow.sdk.exceptions import AirflowNotFoundException, AirflowRuntimeError

    for key, conn_id in stream.alerts.connections() if stream.alerts else ():
        if conn_id in _checked_connections:
            continue
        try:
            Connection.get(conn_id)
        except (AirflowNotFoundException, AirflowRuntimeError):
            raise AlertConnectionError(
                f"streams.{stream.name}.{key}: Airflow has no connection {conn_id!r}; add it (airflow connections add "
                f"{conn_id} ..., or the environment variable AIRFLOW_CONN_{conn_id.upper()}) or fix the id in the stream configuration"
            ) from None
        _checked_connections.add(conn_id)


def receiver_secrets(conn_id: str) -> tuple[str, ...]:
    """What of a receiver's connection must never be shown: its password, and the path of a base URL
    kept in its host (a chat webhook's token is its URL's path, which HTTP errors and the HTTP
    hook's own log lines repeat). Each is also handed to Airflow's log masker, so no task log line
    shows it. None when the connection cannot be read (its absence is reported elsewhere)."""
    from urllib.parse import urlsplit

    from airflow.sdk import Connection
    from airflow.sdk.log import mask_secret

    try:
        connection = Connection.get(conn_id)
    except Exception:  # noqa: BLE001 - the receiver's own failure names the connection
        return ()
    secrets = [connection.password or ""]
    host = connection.host or ""
    if "://" in host:
        secrets.append(urlsplit(host).path.strip("/"))
    secrets = tuple(secret for secret in secrets if len(secret) >= 4)  # a '/' or 'v1' is no secret
    for secret in secrets:
        mask_secret(secret)
    return secrets


def redacted(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with every secret replaced by '***' (Airflow's own mask)."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def task_identity(context: Any) -> TaskIdentity:
    """Which task instance a callback's context is about."""
    ti = context["ti"]
    return TaskIdentity(
        dag_id=ti.dag_id,
        run_id=ti.run_id,
        task_id=ti.task_id,
        try_number=getattr(ti, "try_number", None),
        log_url=getattr(ti, "log_url", None),
    )
