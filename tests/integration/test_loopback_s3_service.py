"""The loopback S3 as the embedded stack runs it: `tidemark up s3`, `tidemark services s3`, `tidemark down s3`."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from connectors.jars import ensure_jars, shared_jars_root
from stack.environment import LOOPBACK_S3_IDENTITY
from stack.ports import free_port, port_answers

pytestmark = pytest.mark.integration


def test_the_stack_starts_the_loopback_s3_with_the_lake_bucket_under_its_home_and_stops_it(tmp_path):
    port = free_port()
    ensure_jars(shared_jars_root(), ["s3proxy"])  # the stack runs from the jars, it never fetches them
    env = {
        **os.environ,
        "TIDEMARK_HOME": str(tmp_path / "home"),
        "TIDEMARK_S3_PORT": str(port),
        "TIDEMARK_JARS": str(shared_jars_root()),
    }

    def tidemark(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "tidemark_cli", *args], env=env, capture_output=True, text=True, timeout=120
        )

    started = tidemark("up", "s3")
    try:
        assert started.returncode == 0, started.stderr
        assert started.stdout.strip() == (
            f"Loopback S3 started on http://127.0.0.1:{port} (buckets tidemark; data in {tmp_path / 'home' / 's3' / 'data'})."
        )
        assert (tmp_path / "home" / "s3" / "data" / "tidemark").is_dir()
        assert (tmp_path / "home" / "s3" / "s3proxy.properties").stat().st_mode & 0o077 == 0
        status = tidemark("services", "s3")
        assert status.returncode == 0 and status.stdout.startswith("s3: running (pid ")
        assert tidemark("up", "s3").stdout.startswith(f"Loopback S3 already running on http://127.0.0.1:{port}")
        assert LOOPBACK_S3_IDENTITY[1] not in started.stdout + status.stdout
    finally:
        stopped = tidemark("down", "s3")
    assert stopped.stdout.strip() == "Loopback S3 stopped."
    assert not port_answers(port)
    assert tidemark("services", "s3").returncode == 3
