"""The one wiring module of the embedded stack.

``embedded_environment()`` returns the environment variables every process of the embedded
stack needs: the Kafka broker, Airflow and its tasks, spark-submit, the tests. Each variable is
set only when the caller's environment does not already set it, so a user's shell or
docker-compose (the full stack) overrides any of them by exporting it; only configuration
changes between the two.

Everything stateful lives under ``TIDEMARK_HOME`` (default ``<repo>/.tidemark``, git-ignored):

    $TIDEMARK_HOME/jars         JVM jars from connectors/jvm/pom.xml (kafka/, delta/, spark-kafka/)
    $TIDEMARK_HOME/kafka        broker config, data and logs
    $TIDEMARK_HOME/airflow      AIRFLOW_HOME: SQLite database, logs, generated password
    $TIDEMARK_HOME/lake         Delta tables
    $TIDEMARK_HOME/checkpoints  Spark streaming checkpoints
    $TIDEMARK_HOME/s3           the loopback S3 (s3proxy): its buckets, config and log
    $TIDEMARK_HOME/kinesis      the loopback Kinesis (moto's server): its pid and log; its streams
                                live in the server's memory and are gone when it stops
    $TIDEMARK_HOME/inbox        the alarm inbox: alarms.jsonl (every alarm received), pid and log

``TIDEMARK_LAKE_STORE=s3`` puts the lake and the checkpoints on the loopback S3 instead
(``s3a://tidemark/lake``, ``s3a://tidemark/checkpoints``) and points the storage settings at it
(connectors/lake_storage.py): one setting, nothing else changes.

This module does no I/O and starts nothing, so DAG files and unit tests may import it freely.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from stack.errors import StackError

REPO_ROOT = Path(__file__).resolve().parent.parent

DEFAULT_KAFKA_PORT = 19092
DEFAULT_AIRFLOW_PORT = 18080
DEFAULT_S3_PORT = 19400
DEFAULT_KINESIS_PORT = 19450
DEFAULT_REGISTRY_PORT = 19480
DEFAULT_INBOX_PORT = 19490
LOOPBACK = "127.0.0.1"
# The loopback S3's bucket and the identity it accepts: its own, bound to 127.0.0.1, no secret.
LOOPBACK_S3_BUCKET = "tidemark"
LOOPBACK_S3_IDENTITY = ("tidemark", "tidemark-loopback-s3")
LAKE_STORES = ("local", "s3")
# The loopback Kinesis accepts any keys (moto checks no signature); these are fixed and obviously
# not anyone's, so a stream in the embedded stack needs no real AWS credentials. The Airflow
# connection below carries them, and the demo stream names it (aws_conn_id).
LOOPBACK_KINESIS_IDENTITY = ("tidemark", "tidemark-loopback-kinesis")
LOOPBACK_KINESIS_REGION = "us-east-1"
LOOPBACK_KINESIS_CONN_ID = "tidemark_kinesis_loopback"
# The alarm inbox (stack.alarm_inbox): the webhook receiver the shipped streams' alarms go to. Its
# identity is the loopback's own, like the ones above; the Airflow connection below carries it.
LOOPBACK_INBOX_IDENTITY = ("tidemark", "tidemark-loopback-inbox")
LOOPBACK_INBOX_CONN_ID = "tidemark_inbox"

# A URI such as spark://local[2] makes the Spark provider treat the host as a cluster master
# and fall back to YARN; the JSON form keeps "local[*]" as the master verbatim.
SPARK_DEFAULT_CONNECTION = json.dumps({"conn_type": "spark", "host": "local[*]"})


# How often the embedded stack's dag-processor parses each DAG file, s (Airflow's default is 30);
# why: at the setting below.
DAG_FILE_PARSE_INTERVAL_S = 120


def tidemark_home(repo_root: Path | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """The state folder of the embedded stack: ``$TIDEMARK_HOME`` or ``<repo>/.tidemark``."""
    environ = os.environ if environ is None else environ
    if environ.get("TIDEMARK_HOME"):
        return Path(environ["TIDEMARK_HOME"])
    return (repo_root or REPO_ROOT) / ".tidemark"


def jars_root(environ: Mapping[str, str] | None = None) -> Path:
    """Where the services' JVM jars are: ``$TIDEMARK_JARS``, else ``$TIDEMARK_HOME/jars``.

    One folder per group (kafka/, s3proxy/...), fetched by ``tidemark jars`` (connectors/jars.py,
    which production needs too); the stack only runs from them, it never fetches.
    """
    environ = os.environ if environ is None else environ
    return Path(environ["TIDEMARK_JARS"]) if environ.get("TIDEMARK_JARS") else tidemark_home(environ=environ) / "jars"


def kafka_port(environ: Mapping[str, str] | None = None) -> int:
    """The broker's client port (``TIDEMARK_KAFKA_PORT``); the controller listens on port + 1."""
    return _port(os.environ if environ is None else environ, "TIDEMARK_KAFKA_PORT", DEFAULT_KAFKA_PORT)


def airflow_port(environ: Mapping[str, str] | None = None) -> int:
    """The Airflow API server's port (``TIDEMARK_AIRFLOW_PORT``), UI included."""
    return _port(os.environ if environ is None else environ, "TIDEMARK_AIRFLOW_PORT", DEFAULT_AIRFLOW_PORT)


def s3_port(environ: Mapping[str, str] | None = None) -> int:
    """The loopback S3's port (``TIDEMARK_S3_PORT``)."""
    return _port(os.environ if environ is None else environ, "TIDEMARK_S3_PORT", DEFAULT_S3_PORT)


def kinesis_port(environ: Mapping[str, str] | None = None) -> int:
    """The loopback Kinesis's port (``TIDEMARK_KINESIS_PORT``)."""
    return _port(os.environ if environ is None else environ, "TIDEMARK_KINESIS_PORT", DEFAULT_KINESIS_PORT)


def registry_port(environ: Mapping[str, str] | None = None) -> int:
    """The schema registry's port (``TIDEMARK_REGISTRY_PORT``)."""
    return _port(os.environ if environ is None else environ, "TIDEMARK_REGISTRY_PORT", DEFAULT_REGISTRY_PORT)


def inbox_port(environ: Mapping[str, str] | None = None) -> int:
    """The alarm inbox's port (``TIDEMARK_INBOX_PORT``)."""
    return _port(os.environ if environ is None else environ, "TIDEMARK_INBOX_PORT", DEFAULT_INBOX_PORT)


def loopback_inbox_connection(port: int) -> str:
    """The Airflow HTTP connection (JSON form) of the alarm inbox on ``port``."""
    login, password = LOOPBACK_INBOX_IDENTITY
    return json.dumps(
        {"conn_type": "http", "host": LOOPBACK, "port": port, "schema": "http", "login": login, "password": password}
    )


def loopback_kinesis_connection(port: int) -> str:
    """The Airflow AWS connection (JSON form) of the loopback Kinesis on ``port``."""
    key, secret = LOOPBACK_KINESIS_IDENTITY
    return json.dumps(
        {
            "conn_type": "aws",
            "login": key,
            "password": secret,
            "extra": {"region_name": LOOPBACK_KINESIS_REGION, "endpoint_url": f"http://{LOOPBACK}:{port}"},
        }
    )


def embedded_environment(repo_root: Path | None = None, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables the embedded stack needs, each one only if ``environ`` lacks it.

    ``environ`` defaults to ``os.environ``. The result is meant to be merged over it:
    ``{**os.environ, **embedded_environment()}``. ``PATH`` is the one exception to "only if
    not set": it always comes back, with this interpreter's bin folder (the venv, where
    ``spark-submit`` and ``airflow`` live) moved to the front.

    Raises ``StackError`` if ``TIDEMARK_KAFKA_PORT`` or ``TIDEMARK_AIRFLOW_PORT`` is not a
    port number.
    """
    environ = os.environ if environ is None else environ
    repo = repo_root or REPO_ROOT
    home = tidemark_home(repo, environ)
    kafka = kafka_port(environ)
    api = airflow_port(environ)
    store = environ.get("TIDEMARK_LAKE_STORE") or "local"
    if store not in LAKE_STORES:
        raise StackError(f"TIDEMARK_LAKE_STORE={store!r} is not one of {', '.join(LAKE_STORES)}.")

    defaults: dict[str, str] = {
        "TIDEMARK_HOME": str(home),
        "TIDEMARK_CONF": str(repo / "conf" / "streams.yaml"),
        "TIDEMARK_KAFKA_PORT": str(kafka),
        "TIDEMARK_KAFKA_BOOTSTRAP": f"{LOOPBACK}:{kafka}",
        "TIDEMARK_S3_PORT": str(s3_port(environ)),
        "TIDEMARK_KINESIS_PORT": str(kinesis_port(environ)),
        "TIDEMARK_REGISTRY_PORT": str(registry_port(environ)),
        "TIDEMARK_INBOX_PORT": str(inbox_port(environ)),
        # The chaos switch as a file (tidemark.chaos_freeze): off while the file does not exist;
        # `tidemark demo --incident` writes and removes it under a running Airflow.
        "TIDEMARK_CHAOS_FREEZE_FILE": str(home / "chaos" / "freeze"),
        "TIDEMARK_KINESIS_ENDPOINT": f"http://{LOOPBACK}:{kinesis_port(environ)}",
        # The loopback Kinesis's own identity (not anyone's secret): the processes the CLI starts
        # (the persistence report, `tidemark status`) read a Kinesis stream without Airflow, where
        # the stream's aws_conn_id connection lives (tidemark.kinesis_access reads these names).
        "TIDEMARK_KINESIS_ACCESS_KEY_ID": LOOPBACK_KINESIS_IDENTITY[0],
        "TIDEMARK_KINESIS_SECRET_ACCESS_KEY": LOOPBACK_KINESIS_IDENTITY[1],
        **_lake_location(store, home, s3_port(environ)),
        "TIDEMARK_JARS": str(home / "jars"),
        "TIDEMARK_AIRFLOW_PORT": str(api),
        # Spark: driver and executors run this venv's Python, and never bind a public address.
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": LOOPBACK,
        # Airflow 3.3 (keys from airflow/config_templates/config.yml).
        "AIRFLOW_HOME": str(home / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(repo / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(repo / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        # Spark jobs are the heavy tasks; more than a few at once would starve 2 cores.
        "AIRFLOW__CORE__PARALLELISM": "8",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
        "AIRFLOW__API__HOST": LOOPBACK,
        "AIRFLOW__API__PORT": str(api),
        # The links Airflow writes (an alarm's task log URL) name this server, not localhost:8080.
        "AIRFLOW__API__BASE_URL": f"http://{LOOPBACK}:{api}",
        "AIRFLOW__API__WORKERS": "1",
        # Task processes reach the API server here; the default is http://localhost:8080.
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://{LOOPBACK}:{api}/execution/",
        # New DAG files show up in ~10 s instead of the default 5 minutes.
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "10",
        "AIRFLOW__DAG_PROCESSOR__PARSING_PROCESSES": "1",
        # Each DAG file parsed every 2 minutes instead of Airflow's 30 s: parsing is the largest
        # cost of an idle stack (a family of 200 idle members: the dag-processor 523 CPU-s an hour
        # at 30 s, 138 at 120 s; benchmarks/many_streams_idle.py --parse-only). An
        # edited streams file or a refreshed listing shows within 2 minutes; a new file at once.
        "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": str(DAG_FILE_PARSE_INTERVAL_S),
        # Component output goes to log files, where colour codes are noise.
        "AIRFLOW__LOGGING__COLORED_CONSOLE_LOG": "False",
        "AIRFLOW_CONN_SPARK_DEFAULT": SPARK_DEFAULT_CONNECTION,
        f"AIRFLOW_CONN_{LOOPBACK_KINESIS_CONN_ID.upper()}": loopback_kinesis_connection(kinesis_port(environ)),
        # The shipped streams' alarms go to the alarm inbox (conf/streams.yaml, alerts:).
        f"AIRFLOW_CONN_{LOOPBACK_INBOX_CONN_ID.upper()}": loopback_inbox_connection(inbox_port(environ)),
    }
    result = {name: value for name, value in defaults.items() if not environ.get(name)}
    result["PATH"] = _path_with_venv_first(environ.get("PATH", ""))
    return result


def _lake_location(store: str, home: Path, port: int) -> dict[str, str]:
    if store == "local":
        return {"TIDEMARK_LAKE_ROOT": str(home / "lake"), "TIDEMARK_CHECKPOINT_ROOT": str(home / "checkpoints")}
    key, secret = LOOPBACK_S3_IDENTITY
    return {
        "TIDEMARK_LAKE_ROOT": f"s3a://{LOOPBACK_S3_BUCKET}/lake",
        "TIDEMARK_CHECKPOINT_ROOT": f"s3a://{LOOPBACK_S3_BUCKET}/checkpoints",
        "TIDEMARK_S3_ENDPOINT": f"http://{LOOPBACK}:{port}",
        "AWS_ACCESS_KEY_ID": key,
        "AWS_SECRET_ACCESS_KEY": secret,
        "AWS_REGION": "us-east-1",
    }


def _path_with_venv_first(path: str) -> str:
    # Not resolved: .venv/bin/python is a symlink to the base interpreter, and the venv's
    # console scripts (spark-submit, airflow) sit next to the link, not next to its target.
    venv_bin = str(Path(sys.executable).parent)
    rest = [entry for entry in path.split(os.pathsep) if entry and entry != venv_bin]
    return os.pathsep.join([venv_bin, *rest])


def _port(environ: Mapping[str, str], name: str, default: int) -> int:
    raw = environ.get(name)
    if not raw:
        return default
    try:
        port = int(raw)
    except ValueError:
        raise StackError(f"{name}={raw!r} is not a port number; set it to e.g. {default}.") from None
    if not 1024 <= port <= 65534:
        raise StackError(f"{name}={port} is outside 1024..65534; set it to e.g. {default}.")
    return port
