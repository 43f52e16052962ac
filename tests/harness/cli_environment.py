"""The tidemark CLI run in the test's process, with its state in a temporary folder.

``main()`` merges the embedded environment into ``os.environ`` as the console script does; the
fixture puts the process environment back afterwards, so no other test sees the CLI's settings.
Airflow's and Kafka's ports are free ones nothing listens on: a command that got past its
argument checks finds "the stack is not up" (exit 1), which tells a test that no check refused
it first, and `status` reads the lake with the log away.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from stack.ports import free_port

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def cli_home(tmp_path: Path):
    """The CLI's $TIDEMARK_HOME, in a clean environment; yields the folder."""
    saved = dict(os.environ)
    for name in list(os.environ):
        if name.startswith(("TIDEMARK_", "AIRFLOW")):
            del os.environ[name]
    home = tmp_path / "home"
    # Ports nothing listens on: the developer's own stack, if it runs, is never asked.
    os.environ.update(
        TIDEMARK_HOME=str(home), TIDEMARK_AIRFLOW_PORT=str(free_port()), TIDEMARK_KAFKA_PORT=str(free_port(2))
    )
    try:
        yield home
    finally:
        os.environ.clear()
        os.environ.update(saved)


def streams_file(folder: Path, names: list[str]) -> Path:
    """A streams.yaml with the shipped stream under each of ``names``."""
    shipped = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())["streams"]["telemetry"]
    path = folder / "streams.yaml"
    path.write_text(yaml.safe_dump({"streams": {name: shipped for name in names}}))
    return path
