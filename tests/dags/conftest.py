"""Airflow for the DAG tests: a throwaway AIRFLOW_HOME, the repo's dags/ and plugins/, no services."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from connectors.jars import shared_jars_root
from stack.environment import embedded_environment

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def airflow_environment(tmp_path_factory) -> dict[str, str]:
    """The embedded stack's environment with its state in a temporary folder.

    Airflow itself always runs in child processes with this environment: it reads its
    configuration once, when first imported, so importing it into the pytest process would tie
    every test to whatever configuration was there first. The metadata database is migrated once.
    """
    home = tmp_path_factory.mktemp("tidemark-home")
    overrides = {
        "TIDEMARK_HOME": str(home),
        "TIDEMARK_JARS": str(shared_jars_root()),
        "AIRFLOW_HOME": str(home / "airflow"),
        "TIDEMARK_LAKE_ROOT": str(home / "lake"),
        "TIDEMARK_CHECKPOINT_ROOT": str(home / "checkpoints"),
    }
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "TIDEMARK"))}
    environment = {**base, **overrides, **embedded_environment(REPO, {**base, **overrides})}
    migrate = subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"], env=environment, capture_output=True, text=True, timeout=300
    )
    assert migrate.returncode == 0, migrate.stderr[-3000:]
    return environment


@pytest.fixture
def receivers():
    """A loopback SMTP server and HTTP receiver the stream's alerts: points at (harness.alarm_receivers)."""
    from harness.alarm_receivers import alarm_receivers

    with alarm_receivers() as running:
        yield running
