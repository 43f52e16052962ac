"""The environment a benchmark's jobs run with: its own broker, lake and checkpoints in scratch."""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def scratch_environment(bootstrap: str, scratch: Path, jars: Path) -> dict[str, str]:
    return {
        **os.environ,
        "TIDEMARK_KAFKA_BOOTSTRAP": bootstrap,
        "TIDEMARK_LAKE_ROOT": str(scratch / "lake"),
        "TIDEMARK_CHECKPOINT_ROOT": str(scratch / "checkpoints"),
        "TIDEMARK_JARS": str(jars),
        "TIDEMARK_CONF": str(REPO / "conf" / "streams.yaml"),
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
