"""The watermark page as users meet it: Airflow's own API server with the repo's plugins folder,
serving a recorded stream state (tests/harness/recorded_stream.py), and headless Chromium."""

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
from stack.environment import embedded_environment
from stack.ports import free_port

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "page-test-password"


@dataclass(frozen=True)
class AirflowUi:
    url: str  # http://127.0.0.1:PORT
    token: str  # a logged-in admin's JWT (POST /auth/token)
    recorded: RecordedStream


@pytest.fixture(scope="session")
def recorded_stream(spark, kafka_broker, tmp_path_factory) -> RecordedStream:
    return write_recorded_stream(spark, kafka_broker, tmp_path_factory.mktemp("recorded"), int(time.time() * 1000))


@pytest.fixture(scope="session")
def airflow_ui(recorded_stream, tmp_path_factory) -> Iterator[AirflowUi]:
    """Airflow's API server alone (the page needs no scheduler), with the plugin loaded from the
    repo's plugins folder and the recorded stream's configuration; one admin user."""
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
        yield AirflowUi(url, _token(url), recorded_stream)
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
