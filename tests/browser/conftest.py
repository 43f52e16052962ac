"""The watermark page as users meet it: Airflow's own API server with the repo's plugins folder,
serving a recorded stream state (tests/harness/recorded_stream.py), and headless Chromium.

The recorded topic is on the broker's SASL_SSL listener (SCRAM-SHA-512). The stream names the
``kafka`` connection that secures it, and the connection is made in Airflow's metadata database
through the REST API, as an operator makes it in the UI: the page reads it from Airflow, never
from a variable of the API server's environment. Connection tests are enabled, so the
connection's "Test" button (the provider's hook) can be pressed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from connectors.jars import shared_jars_root
from harness.recorded_stream import RecordedStream, write_recorded_stream
from harness.secured_kafka import SecuredKafka, scram
from stack.environment import embedded_environment
from stack.ports import free_port

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "page-test-password"


@dataclass(frozen=True)
class AirflowUi:
    url: str  # http://127.0.0.1:PORT
    token: str  # a logged-in admin's JWT (POST /auth/token)
    recorded: RecordedStream
    secured: SecuredKafka  # the recorded topic's listener and connection
    log: Path  # the API server's output


@pytest.fixture(scope="session")
def recorded_stream(spark, kafka_broker, tmp_path_factory) -> RecordedStream:
    folder = tmp_path_factory.mktemp("recorded")
    return write_recorded_stream(spark, kafka_broker, folder, int(time.time() * 1000), scram(kafka_broker))


@pytest.fixture(scope="session")
def secured_kafka(kafka_broker) -> SecuredKafka:
    return scram(kafka_broker)


@pytest.fixture(scope="session")
def airflow_ui(recorded_stream, secured_kafka, tmp_path_factory) -> Iterator[AirflowUi]:
    """Airflow's API server alone (the page needs no scheduler), with the plugin loaded from the
    repo's plugins folder and the recorded stream's configuration; one admin user; the recorded
    topic's ``kafka`` connection in the metadata database."""
    home = tmp_path_factory.mktemp("airflow-ui")
    passwords = home / "passwords.json"
    passwords.write_text(json.dumps({"admin": PASSWORD}))
    port = free_port()
    overrides = {
        "TIDEMARK_HOME": str(recorded_stream.home),
        "TIDEMARK_CONF": str(recorded_stream.conf_path),
        "TIDEMARK_LAKE_ROOT": str(recorded_stream.lake_root),
        "TIDEMARK_CHECKPOINT_ROOT": str(home / "checkpoints"),
        "TIDEMARK_JARS": str(shared_jars_root()),
        "AIRFLOW_HOME": str(home / "airflow"),
        "TIDEMARK_AIRFLOW_PORT": str(port),
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
        "AIRFLOW__CORE__TEST_CONNECTION": "Enabled",
    }
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "TIDEMARK"))}
    environment = {**base, **overrides, **embedded_environment(REPO, {**base, **overrides})}
    migrate = subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"], env=environment, capture_output=True, text=True, timeout=300
    )
    assert migrate.returncode == 0, migrate.stderr[-3000:]
    log = open(home / "api-server.log", "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "airflow", "api-server", "--port", str(port)],
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, server, home / "api-server.log")
        token = _token(url)
        _add_kafka_connection(url, token, secured_kafka)
        yield AirflowUi(url, token, recorded_stream, secured_kafka, home / "api-server.log")
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def _wait_until_up(url: str, server: subprocess.Popen, log: Path, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"the API server exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url + "/api/v2/monitor/health", timeout=5):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(1)
    pytest.fail(f"the API server did not answer within {timeout_s:.0f}s:\n{log.read_text()[-3000:]}")


def _add_kafka_connection(url: str, token: str, secured: SecuredKafka) -> None:
    request = urllib.request.Request(
        url + "/api/v2/connections",
        data=json.dumps(secured.rest_connection()).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 201


def _token(url: str) -> str:
    request = urllib.request.Request(
        url + "/auth/token",
        data=json.dumps({"username": "admin", "password": PASSWORD}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)["access_token"]


@pytest.fixture(scope="session")
def chromium_path() -> str:
    """Debian's chromium (installed by .ci/run); the test fails, not skips, without it."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    assert path, "headless Chromium is needed: apt-get install chromium (.ci/run installs it)"
    return path
