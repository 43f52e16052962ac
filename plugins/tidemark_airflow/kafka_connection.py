"""A stream's Kafka connection, read from Airflow into the environment its job reads.

A Kafka source names an Airflow connection of the ``kafka`` type (``source.kafka_conn_id``), as
apache-airflow-providers-apache-kafka defines it: its extra is a JSON object of librdkafka
settings. Airflow finds it wherever connections are kept (its database, ``AIRFLOW_CONN_*``, a
secrets backend). ``apply_kafka_connection(conn_id)`` writes those settings as the variable
tidemark.kafka_access reads (``TIDEMARK_KAFKA_CONN_<ID>``) into this process's environment, where
spark-submit's driver and, through ``spark.executorEnv`` (redacted by name), the executors find
them; the Spark-free readers of a task (the look before a run) read them there too. The settings
are checked on the way (tidemark.kafka_access.KafkaAccess.of): a key tidemark does not take fails
the task, naming it. Values are never logged.
"""

from __future__ import annotations

import json
import os
from typing import Any

from tidemark.kafka_access import KafkaAccess, settings_variable


def kafka_settings(connection: Any) -> dict[str, Any]:
    """The connection's librdkafka settings: its extra (the provider keeps them all there)."""
    return dict(getattr(connection, "extra_dejson", None) or {})


def apply_kafka_connection(
    conn_id: str | None, bootstrap_servers: str, environ: dict[str, str] | None = None
) -> str | None:
    """Write the settings of the Airflow connection ``conn_id`` into ``environ`` (default
    ``os.environ``) and return ``conn_id``; without one change nothing and return None
    (PLAINTEXT). Raises Airflow's error for a connection that does not exist, and
    tidemark.kafka_access.KafkaAccessError for settings tidemark cannot use."""
    if not conn_id:
        return None
    environ = os.environ if environ is None else environ
    from airflow.sdk import BaseHook

    text = json.dumps(kafka_settings(BaseHook.get_connection(conn_id)))
    variable = settings_variable(conn_id)
    KafkaAccess.of(bootstrap_servers, conn_id, {variable: text})  # checked before the job sees it
    environ[variable] = text
    return conn_id
