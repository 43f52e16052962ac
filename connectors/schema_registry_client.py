"""A schema registry's writer schemas, asked by id over its Confluent-compatible API, cached.

``RegistryClient(access).avro(schema_id)`` answers tidemark.writer_schemas.WriterSchemas: it asks
``GET <url>/schemas/ids/<id>`` once per id and keeps the parsed schema for the life of the
process; ``registry_client(access)`` keeps one client per registry and login per process, so a Spark Python worker
that decodes many batches asks for each schema once, never per record or per batch.

Contract, after the registry's answer:
- 200: the schema, parsed (fastavro.parse_schema);
- 404 (Confluent's error 40403, Apicurio's compatibility API too): UnknownSchemaError, and the
  record that names the id is quarantined;
- 401 or 403: RegistryRefusedError at once (the login is wrong; waiting cannot help), which fails
  the batch like an outage: no record is quarantined for a registry's refusal;
- anything else (refused, a timeout, a 5xx): asked again with a growing pause until
  ``patience_s`` has passed, then RegistryUnavailableError, which fails the batch: a registry
  that is down quarantines nothing and skips nothing.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

from tidemark.registry_access import RegistryAccess
from tidemark.writer_schemas import RegistryUnavailableError, UnknownSchemaError

# How long a question may go unanswered before the batch fails (s): long enough for a registry
# restart or a failover, short next to a task's retry.
PATIENCE_S = 60.0
_REQUEST_TIMEOUT_S = 10.0


class RegistryRefusedError(RegistryUnavailableError):
    """The registry refused the login (HTTP 401 or 403): the message names the connection and the
    login, never the password."""


class RegistryClient:
    """Writer schemas of the registry ``access`` names (the compatibility API's base and the login
    that reaches it), by id, cached."""

    def __init__(self, access: RegistryAccess, patience_s: float = PATIENCE_S, sleep=time.sleep, clock=time.monotonic):
        self.url = access.url.rstrip("/")
        self._access = access
        self._patience_s = patience_s
        self._sleep = sleep
        self._clock = clock
        self._parsed: dict[int, Any] = {}
        self._lock = threading.Lock()
        self.asked = 0  # requests made: what the cache saves is visible

    def avro(self, schema_id: int) -> Any:
        """The parsed Avro writer schema ``schema_id``. Raises UnknownSchemaError or
        RegistryUnavailableError (tidemark.writer_schemas)."""
        with self._lock:
            if schema_id in self._parsed:
                return self._parsed[schema_id]
        from fastavro import parse_schema

        answer = self._schema(schema_id)
        if answer.get("schemaType", "AVRO") != "AVRO":
            raise UnknownSchemaError(schema_id)  # an id of another format's schema: not this record's
        parsed = parse_schema(json.loads(answer["schema"]))
        with self._lock:
            self._parsed[schema_id] = parsed
        return parsed

    def _schema(self, schema_id: int) -> dict:
        deadline = self._clock() + self._patience_s
        pause = 0.2
        while True:
            self.asked += 1
            request = urllib.request.Request(f"{self.url}/schemas/ids/{schema_id}", headers=self._access.headers())
            try:
                with urllib.request.urlopen(request, timeout=_REQUEST_TIMEOUT_S) as answer:
                    return json.load(answer)
            except urllib.error.HTTPError as error:
                if error.code == 404:
                    raise UnknownSchemaError(schema_id) from None
                if error.code in (401, 403):
                    raise RegistryRefusedError(
                        f"the schema registry at {self.url} refused {self._access.described()}: HTTP {error.code}; "
                        "the batch fails, nothing is quarantined"
                    ) from None
                problem = f"answered HTTP {error.code}"
            except (urllib.error.URLError, OSError, ValueError) as error:
                reason = getattr(error, "reason", error)
                problem = f"did not answer ({getattr(reason, 'strerror', None) or reason})"
            if self._clock() + pause > deadline:
                raise RegistryUnavailableError(
                    f"the schema registry at {self.url} {problem} for schema {schema_id}, "
                    f"for {self._patience_s:.0f} s: the batch fails and is retried, nothing is quarantined"
                )
            self._sleep(pause)
            pause = min(pause * 2, 5.0)


_clients: dict[tuple[RegistryAccess, float], RegistryClient] = {}
_clients_lock = threading.Lock()


def registry_client(access: RegistryAccess, patience_s: float = PATIENCE_S) -> RegistryClient:
    """This process's client of the registry ``access`` names that waits ``patience_s`` (one per
    registry, login and patience, so its cache lasts as long as the process)."""
    with _clients_lock:
        if (access, patience_s) not in _clients:
            _clients[access, patience_s] = RegistryClient(access, patience_s)
        return _clients[access, patience_s]


def register_schema(access: RegistryAccess, subject: str, schema: str, schema_type: str = "AVRO") -> int:
    """Register ``schema`` (its text) under ``subject``, as a producer's serializer does, and
    return its id (an equal schema already there keeps its id). Raises RegistryRefusedError for
    a refused login, RegistryUnavailableError for anything else the registry answers."""
    body = json.dumps({"schema": schema, "schemaType": schema_type, "references": []}).encode()
    headers = {"Content-Type": "application/vnd.schemaregistry.v1+json", **access.headers()}
    url = f"{access.url.rstrip('/')}/subjects/{subject}/versions"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers), timeout=30) as answer:
            return int(json.load(answer)["id"])
    except urllib.error.HTTPError as error:
        if error.code in (401, 403):
            raise RegistryRefusedError(
                f"the schema registry at {access.url} refused {access.described()}: HTTP {error.code}"
            ) from None
        raise RegistryUnavailableError(
            f"the schema registry at {access.url} answered HTTP {error.code} to {subject!r}"
        ) from None
    except (urllib.error.URLError, OSError) as error:
        raise RegistryUnavailableError(
            f"the schema registry at {access.url} did not answer ({getattr(error, 'reason', error)})"
        ) from None
