"""A stream's schema registry login, read from Airflow into the environment its job reads.

An Avro stream whose registry asks for a login names an Airflow connection
(``payload.registry_conn_id``, type ``http``: its login and password). Airflow finds it wherever
connections are kept (its database, ``AIRFLOW_CONN_*``, a secrets backend).
``apply_registry_connection(conn_id)`` writes them as the variable tidemark.registry_access reads
(``TIDEMARK_REGISTRY_CONN_<ID>``) into this process's environment, where spark-submit's driver
finds them and hands them to the executors' Python workers (connectors.spark_session). Values
are never logged.
"""

from __future__ import annotations

import json
import os

from tidemark.registry_access import RegistryAccess, settings_variable


def apply_registry_connection(conn_id: str | None, url: str, environ: dict[str, str] | None = None) -> str | None:
    """Write the login of the Airflow connection ``conn_id`` into ``environ`` (default
    ``os.environ``) and return ``conn_id``; without one change nothing and return None. Raises
    Airflow's error for a connection that does not exist, and
    tidemark.registry_access.RegistryAccessError for one without a login."""
    if not conn_id:
        return None
    environ = os.environ if environ is None else environ
    from airflow.sdk import BaseHook

    connection = BaseHook.get_connection(conn_id)
    text = json.dumps({"login": connection.login or "", "password": connection.password or ""})
    variable = settings_variable(conn_id)
    RegistryAccess.of(url, conn_id, {variable: text})  # checked before the job sees it
    environ[variable] = text
    return conn_id
