"""The environment a benchmark's jobs run with: its own broker, lake and checkpoints in scratch."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def scratch_broker(scratch: Path, jars: Path, secured: bool = False) -> Iterator:
    """A Kafka broker of the benchmark's own: state in ``scratch``, a free loopback port (and a
    SASL_SSL listener on the port after the controller's when ``secured``); stopped when the block
    ends, whatever happened in it."""
    from stack.kafka_broker import KafkaBroker
    from stack.ports import free_port

    port = free_port(consecutive=3)
    broker = KafkaBroker(state_dir=scratch / "kafka", jars_dir=jars, port=port, sasl_port=port + 2 if secured else None)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


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


def benchmark_spark_session(name: str):
    """A lake Spark session in this process with the shared Delta jars (fetched once), logging
    Spark's errors only: the session a benchmark that runs its jobs in-process measures with."""
    from connectors.jars import ensure_jars, shared_jars_root
    from connectors.spark_session import lake_spark_session

    jars = shared_jars_root()
    ensure_jars(jars, ["delta"])
    os.environ.setdefault("TIDEMARK_JARS", str(jars))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = lake_spark_session(name)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def scratch_stream_config(scratch: Path) -> Path:
    """A streams.yaml in ``scratch`` holding the shipped telemetry stream alone, its lake and
    checkpoints in ``scratch`` (the other shipped streams' paths come from the stack's environment)."""
    import yaml

    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    document["streams"]["telemetry"]["lake"] = {"root": str(scratch / "lake"), "checkpoint_root": str(scratch / "cp")}
    document["streams"] = {"telemetry": document["streams"]["telemetry"]}
    path = scratch / "streams.yaml"
    path.write_text(yaml.safe_dump(document))
    return path
