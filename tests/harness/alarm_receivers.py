"""Loopback receivers for alarms, started by a test: a real SMTP server (aiosmtpd) that demands a
login, and a real HTTP server that takes JSON POSTs with basic auth. Each keeps what arrived, with
the wall-clock moment (time.monotonic) it arrived, and gives the Airflow connection that reaches
it, credentials included: the tests assert those credentials never appear in a message.
"""

from __future__ import annotations

import base64
import email
import email.policy
import json
import socket
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from harness.json_http import send_json

SMTP_LOGIN, SMTP_PASSWORD = "alarm-mailer", "smtp-secret-7f3a9c"
HOOK_LOGIN, HOOK_PASSWORD = "alarm-hook", "hook-secret-2b8d41"
FROM_EMAIL, TO_EMAIL = "tidemark@example.com", "oncall@example.com"


@dataclass(frozen=True)
class Received:
    at: float  # time.monotonic() when it arrived
    text: str  # the whole message as it came over the wire (mail: headers and body, decoded)
    body: dict | None = None  # a webhook's JSON
    authorization: str | None = None  # a webhook's Authorization header


@dataclass
class AlarmReceivers:
    smtp_port: int
    http_port: int
    mails: list[Received] = field(default_factory=list)
    posts: list[Received] = field(default_factory=list)

    def connections(self, smtp_conn_id: str = "tm_alarm_smtp", http_conn_id: str = "tm_alarm_hook") -> dict[str, str]:
        """AIRFLOW_CONN_* variables for an SMTP and an HTTP connection to these receivers."""
        smtp = {
            "conn_type": "smtp",
            "host": "127.0.0.1",
            "port": self.smtp_port,
            "login": SMTP_LOGIN,
            "password": SMTP_PASSWORD,
            "extra": {"disable_tls": True, "disable_ssl": True, "timeout": 10, "retry_limit": 0},
        }
        http = {
            "conn_type": "http",
            "host": "127.0.0.1",
            "port": self.http_port,
            "schema": "http",
            "login": HOOK_LOGIN,
            "password": HOOK_PASSWORD,
        }
        return {
            f"AIRFLOW_CONN_{smtp_conn_id.upper()}": json.dumps(smtp),
            f"AIRFLOW_CONN_{http_conn_id.upper()}": json.dumps(http),
        }


def alerts_section(smtp_conn_id: str = "tm_alarm_smtp", http_conn_id: str = "tm_alarm_hook") -> dict:
    """A stream's ``alerts:`` naming both receivers."""
    return {
        "email": {"conn_id": smtp_conn_id, "to": [TO_EMAIL], "from": FROM_EMAIL},
        "webhook": {"conn_id": http_conn_id, "endpoint": "hooks/tidemark"},
    }


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def alarm_receivers() -> Iterator[AlarmReceivers]:
    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult, LoginPassword

    # Login without TLS is what a loopback test server can do; aiosmtpd warns about it on every
    # session (set here, inside the test, where pytest's per-test warning filters are in force).
    warnings.filterwarnings("ignore", message="Requiring AUTH while not requiring TLS")
    smtp_port, http_port = closed_port(), closed_port()
    receivers = AlarmReceivers(smtp_port, http_port)

    class MailHandler:
        async def handle_DATA(self, server, session, envelope):
            message = email.message_from_bytes(envelope.content, policy=email.policy.default)
            parts = [f"{k}: {v}" for k, v in message.items()]
            for part in message.walk():
                if not part.is_multipart():
                    parts.append(part.get_content())
            receivers.mails.append(Received(time.monotonic(), "\n".join(parts)))
            return "250 OK"

    def authenticate(server, session, envelope, mechanism, auth_data):
        ok = isinstance(auth_data, LoginPassword) and (auth_data.login, auth_data.password) == (
            SMTP_LOGIN.encode(),
            SMTP_PASSWORD.encode(),
        )
        return AuthResult(success=ok)

    class HookHandler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - the http.server API
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
            receivers.posts.append(Received(time.monotonic(), raw, json.loads(raw), self.headers.get("Authorization")))
            send_json(self, 200, {"ok": True})

        def log_message(self, *args):
            pass

    controller = Controller(
        MailHandler(),
        hostname="127.0.0.1",
        port=smtp_port,
        authenticator=authenticate,
        auth_required=True,
        auth_require_tls=False,
    )
    controller.start()
    http_server = ThreadingHTTPServer(("127.0.0.1", http_port), HookHandler)
    thread = threading.Thread(target=http_server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receivers
    finally:
        http_server.shutdown()
        http_server.server_close()
        controller.stop()


def basic_auth(login: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{login}:{password}".encode()).decode()
