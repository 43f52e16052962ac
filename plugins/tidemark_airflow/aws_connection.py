"""The lake's S3 settings and a Kinesis stream's credentials from Airflow AWS connections, for
the processes Airflow runs.

tidemark's storage settings are read from the environment (connectors.lake_storage); under
Airflow they may instead live in a connection, named by ``TIDEMARK_AWS_CONN_ID`` in the
environment of Airflow's processes. The connection follows the Amazon provider's layout, which
needs no provider installed: login = access key id, password = secret access key, extra
``{"endpoint_url": ..., "region_name": ..., "aws_session_token": ...}``.

``apply_aws_connection()`` puts those values into this process's environment, where the job
spark-submit starts (client mode inherits it) and the Spark-free readers find them. Never into
the operator's ``env_vars``: on YARN and Kubernetes the Spark provider turns those into
``--conf`` arguments of the spark-submit command line, which it logs.

A Kinesis stream names its connection in the stream configuration (``source.aws_conn_id``).
``apply_kinesis_connection(conn_id)`` writes its keys as the TIDEMARK_KINESIS_* variables
tidemark.kinesis_access reads, not as AWS_*: a lake on S3 under one account and a stream in
another each keep their own keys in the one process. The region is the stream's
(``source.region``); the connection's endpoint_url is used only when the stream names no endpoint.
Nothing here logs a key, and the variables never go into ``env_vars`` either.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from tidemark.kinesis_access import (
    ACCESS_KEY_ID,
    CONNECTION_ENDPOINT,
    CREDENTIAL_VARIABLES,
    SECRET_ACCESS_KEY,
    SESSION_TOKEN,
)

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


def kinesis_environment(connection: Any) -> dict[str, str]:
    """The connection's keys (and endpoint) as the variables tidemark.kinesis_access reads; only those set."""
    extra: Mapping[str, Any] = getattr(connection, "extra_dejson", None) or {}
    values = {
        ACCESS_KEY_ID: connection.login,
        SECRET_ACCESS_KEY: connection.password,
        SESSION_TOKEN: extra.get("aws_session_token"),
        CONNECTION_ENDPOINT: extra.get("endpoint_url") or (connection.host or None),
    }
    return {name: str(value) for name, value in values.items() if value}


def apply_kinesis_connection(conn_id: str | None, environ: dict[str, str] | None = None) -> str | None:
    """Write the keys of the AWS connection ``conn_id`` (a Kinesis stream's source.aws_conn_id)
    into ``environ`` (default ``os.environ``), replacing any earlier connection's, and return
    ``conn_id``; without one change nothing and return None (boto3's default chain then applies).
    A named connection that does not exist fails (Airflow's own error names it)."""
    if not conn_id:
        return None
    environ = os.environ if environ is None else environ
    from airflow.sdk import BaseHook

    values = kinesis_environment(BaseHook.get_connection(conn_id))
    for name in (*CREDENTIAL_VARIABLES, CONNECTION_ENDPOINT):
        environ.pop(name, None)  # a token or endpoint of an earlier connection must not outlive it
    environ.update(values)
    return conn_id
