"""The lake's S3 settings from an Airflow AWS connection, for the processes Airflow runs.

tidemark's storage settings are read from the environment (connectors.lake_storage); under
Airflow they may instead live in a connection, named by ``TIDEMARK_AWS_CONN_ID`` in the
environment of Airflow's processes. The connection follows the Amazon provider's layout, which
needs no provider installed: login = access key id, password = secret access key, extra
``{"endpoint_url": ..., "region_name": ..., "aws_session_token": ...}``.

``apply_aws_connection()`` puts those values into this process's environment, where the job
spark-submit starts (client mode inherits it) and the Spark-free readers find them. Never into
the operator's ``env_vars``: on YARN and Kubernetes the Spark provider turns those into
``--conf`` arguments of the spark-submit command line, which it logs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

CONN_ID_VARIABLE = "TIDEMARK_AWS_CONN_ID"


def aws_environment(connection: Any) -> dict[str, str]:
    """The connection's values as the variables connectors.lake_storage reads; only those set."""
    extra: Mapping[str, Any] = getattr(connection, "extra_dejson", None) or {}
    values = {
        "AWS_ACCESS_KEY_ID": connection.login,
        "AWS_SECRET_ACCESS_KEY": connection.password,
        "AWS_SESSION_TOKEN": extra.get("aws_session_token"),
        "AWS_REGION": extra.get("region_name"),
        "TIDEMARK_S3_ENDPOINT": extra.get("endpoint_url") or (connection.host or None),
    }
    return {name: str(value) for name, value in values.items() if value}


def apply_aws_connection(environ: dict[str, str] | None = None) -> str | None:
    """When ``TIDEMARK_AWS_CONN_ID`` names a connection, write its values into ``environ``
    (default ``os.environ``) and return the connection id; else change nothing and return None.
    A named connection that does not exist fails (Airflow's own error names it)."""
    environ = os.environ if environ is None else environ
    conn_id = environ.get(CONN_ID_VARIABLE)
    if not conn_id:
        return None
    from airflow.sdk import BaseHook

    environ.update(aws_environment(BaseHook.get_connection(conn_id)))
    return conn_id
