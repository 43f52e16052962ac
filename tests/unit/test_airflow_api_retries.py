"""The demo's Airflow client sends an idempotent request again after a server error (the
standalone Airflow's SQLite answers "database is locked" as HTTP 500 while the scheduler
writes), and never a trigger. A loopback HTTP server plays Airflow."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness.json_http import send_json
from stack.airflow_api import AirflowApi
from stack.errors import StackError


class FlakyAirflow(BaseHTTPRequestHandler):
    failures_left: dict[str, int] = {}
    requests: list[tuple[str, str]] = []

    def _answer(self) -> None:
        self.requests.append((self.command, self.path))
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        key = f"{self.command} {self.path}"
        if self.failures_left.get(key, 0) > 0:
            self.failures_left[key] -= 1
            status, body = 500, {"detail": {"reason": "Database error"}}
        elif self.path == "/auth/token":
            status, body = 201, {"access_token": "t"}
        else:
            status, body = 200, {"dag_run_id": "manual__1", "is_paused": False}
        send_json(self, status, body)

    do_GET = do_POST = do_PATCH = _answer

    def log_message(self, *args) -> None:
        """Requests are recorded in ``requests``, not printed to the test's output."""


@pytest.fixture
def airflow():
    server = ThreadingHTTPServer(("127.0.0.1", 0), FlakyAirflow)
    FlakyAirflow.failures_left, FlakyAirflow.requests = {}, []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_an_unpause_that_meets_a_locked_database_is_sent_again(airflow):
    FlakyAirflow.failures_left = {"PATCH /api/v2/dags/d": 2}
    api = AirflowApi(airflow, "admin", "pw", retries=3, retry_wait_s=0.01)

    api.unpause("d")

    assert FlakyAirflow.requests.count(("PATCH", "/api/v2/dags/d")) == 3


def test_a_server_error_that_persists_fails_saying_how_often_it_was_sent(airflow):
    FlakyAirflow.failures_left = {"PATCH /api/v2/dags/d": 10}
    api = AirflowApi(airflow, "admin", "pw", retries=2, retry_wait_s=0.01)

    with pytest.raises(StackError, match=r"HTTP 500 .*Database error.*\(sent 3 times\)"):
        api.unpause("d")


def test_a_trigger_is_never_sent_twice(airflow):
    FlakyAirflow.failures_left = {"POST /api/v2/dags/d/dagRuns": 1}
    api = AirflowApi(airflow, "admin", "pw", retries=3, retry_wait_s=0.01)

    with pytest.raises(StackError, match="HTTP 500"):
        api.trigger("d")
    assert FlakyAirflow.requests.count(("POST", "/api/v2/dags/d/dagRuns")) == 1
