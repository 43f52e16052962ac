"""How a process authenticates to a stream's schema registry, with credentials never in the config.

A stream whose registry asks for a login names an Airflow connection (``payload.registry_conn_id``,
an ``http`` connection: its login and password, as Confluent's ``basic.auth.user.info`` and
Apicurio's basic auth take them). Every process finds them in its environment:

    TIDEMARK_REGISTRY_CONN_<ID>
        {"login": "...", "password": "..."} (<ID>: the connection id in upper case, every
        character other than a letter or a digit written as _). Written by
        tidemark_airflow.registry_connection from the Airflow connection before a job starts,
        handed to the executors' Python workers by connectors.spark_session; exported by hand
        outside Airflow.

Without ``registry_conn_id`` the registry is asked without credentials. Values never appear in
``repr``, a message or a log line.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

SETTINGS_PREFIX = "TIDEMARK_REGISTRY_CONN_"


class RegistryAccessError(ValueError):
    """The registry's credentials cannot be used; the message names the connection and the
    variable, never a value."""


def settings_variable(conn_id: str) -> str:
    """The environment variable that holds connection ``conn_id``'s login and password."""
    return SETTINGS_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", conn_id).upper()


@dataclass(frozen=True)
class RegistryAccess:
    """The registry's URL and, with a connection, the login that reaches it (never in ``repr``)."""

    url: str
    conn_id: str | None = None
    login: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)

    @classmethod
    def of(cls, url: str, conn_id: str | None, environ: Mapping[str, str] | None = None) -> RegistryAccess:
        """The access ``conn_id`` names, read from ``environ`` (default ``os.environ``). Raises
        RegistryAccessError when the variable is missing or is not a JSON object with a login."""
        if conn_id is None:
            return cls(url)
        environ = os.environ if environ is None else environ
        variable = settings_variable(conn_id)
        where = f"the registry connection {conn_id!r} (payload.registry_conn_id)"
        text = environ.get(variable)
        if text is None:
            raise RegistryAccessError(
                f"{where}: {variable} is not set in this process's environment; under Airflow the operator "
                'writes it from the connection, elsewhere export it as {"login": ..., "password": ...}'
            )
        try:
            settings = json.loads(text)
        except ValueError:
            raise RegistryAccessError(f"{where}: {variable} is not JSON (its value is not shown)") from None
        if not isinstance(settings, dict) or not isinstance(settings.get("login"), str) or not settings["login"]:
            raise RegistryAccessError(f'{where}: {variable} must be a JSON object {{"login": ..., "password": ...}}')
        return cls(url, conn_id, settings["login"], str(settings.get("password") or ""))

    def headers(self) -> dict[str, str]:
        """The HTTP headers of a request to the registry: basic auth with a connection, else none."""
        if self.login is None:
            return {}
        token = base64.b64encode(f"{self.login}:{self.password}".encode()).decode()
        return {"Authorization": f"Basic {token}"}

    def described(self) -> str:
        """Who asks, for a message: the connection and its login, never the password."""
        return "without credentials" if self.conn_id is None else f"as {self.login!r} (connection {self.conn_id!r})"
