"""The Spark master and deploy mode an Airflow Spark connection names, read the way the Spark
provider reads it (apache-airflow-providers-apache-spark 6.3.4, ``SparkSubmitHook``), from the
connection's public fields: tidemark decides what a submit adds from the master before the
provider's hook exists, and must not read the hook's private state to learn it.

The provider's rules: a connection of type ``spark`` whose host holds a whole master URL
(``local[*]``, ``spark://h:7077``, ``k8s://https://h``), or that has no port, names that host as the
master; otherwise the master is ``<conn_type>://<host>``; a port is appended as ``:<port>``. The
deploy mode is the operator's own, else the extra ``deploy-mode``. tests/unit/test_spark_job_operator.py
holds this to the ``--master`` the provider's real hook puts on the command line.

No Airflow import: the operator fetches the connection and turns errors into task failures.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SparkConnection:
    """``conn_id``'s master URL (``local[2]``, ``spark://host:7077``, ``yarn``...) and deploy mode
    (``client``, ``cluster``, or None: spark-submit's default, client)."""

    conn_id: str
    master: str
    deploy_mode: str | None

    @classmethod
    def of(cls, conn_id: str, connection: Any, deploy_mode: str | None = None) -> SparkConnection:
        """From an Airflow ``Connection`` (``conn_type``, ``host``, ``port``, ``extra_dejson``)."""
        conn_type, host, port = connection.conn_type, connection.host, connection.port
        if conn_type == "spark" and host and ("://" in host or not port):
            master = host
        else:
            master = f"{conn_type}://{host or ''}"
        if port:
            master = f"{master}:{port}"
        extra: Mapping[str, Any] = connection.extra_dejson or {}
        return cls(conn_id, master, deploy_mode or extra.get("deploy-mode"))
