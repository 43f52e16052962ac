"""A schema registry's writer schemas, asked by id over its Confluent-compatible API, cached.

``RegistryClient(access).avro(schema_id)`` and ``.protobuf(schema_id)`` answer
tidemark.writer_schemas.WriterSchemas: each asks ``GET <url>/schemas/ids/<id>`` once per id (a
Protobuf schema's references too, ``GET <url>/subjects/<subject>/versions/<version>``) and keeps
the parsed schema for the life of the process; ``registry_client(access)`` keeps one client per registry and login per process, so a Spark Python worker
that decodes many batches asks for each schema once, never per record or per batch.

Contract, after the registry's answer:
- 200: the schema, parsed (fastavro.parse_schema; tidemark.protobuf_schemas compiles Protobuf);
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
from urllib.parse import quote

from tidemark.registry_access import RegistryAccess
from tidemark.writer_schemas import RegistryUnavailableError, UnknownSchemaError, UnusableSchemaError

# How long a question may go unanswered before the batch fails (s): long enough for a registry
# restart or a failover, short next to a task's retry.
PATIENCE_S = 60.0
_REQUEST_TIMEOUT_S = 10.0
# Imports of imports...: deeper than any schema, a cycle in the registry's references.
_MAX_REFERENCE_DEPTH = 32


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
        self._parsed: dict[int | str, Any] = {}
        self._lock = threading.Lock()
        self.asked = 0  # requests made: what the cache saves is visible

    def avro(self, schema_id: int | str) -> Any:
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

    def protobuf(self, schema_id: int | str) -> Any:
        """The Protobuf writer schema ``schema_id`` (tidemark.protobuf_schemas.ProtobufSchema), its
        references fetched and compiled first. Raises UnknownSchemaError (UnusableSchemaError
        when it or a reference does not compile, or a reference is missing) or
        RegistryUnavailableError."""
        with self._lock:
            if schema_id in self._parsed:
                return self._parsed[schema_id]
        from tidemark.protobuf_schemas import ProtobufSchema, SchemaCompileError, file_descriptor

        # format=serialized: Confluent's registry answers a Protobuf schema as a base64 descriptor
        # (no compile needed); a registry that ignores it (Apicurio) answers its text.
        answer = self._schema(schema_id, "?format=serialized")
        if answer.get("schemaType") != "PROTOBUF":
            raise UnknownSchemaError(schema_id)  # an id of another format's schema: not this record's
        files: dict[str, Any] = {}
        try:
            imports = self._references(schema_id, answer.get("references") or [], files, depth=0)
            own_name = f"schema_{schema_id}.proto"  # a name no import uses; a serialized one keeps its own
            files[own_name] = file_descriptor(own_name, answer["schema"], imports)
        except SchemaCompileError as error:
            raise UnusableSchemaError(schema_id, str(error)) from None
        parsed = ProtobufSchema(list(files.values()))
        with self._lock:
            self._parsed[schema_id] = parsed
        return parsed

    def _references(self, schema_id: int | str, references: list[dict], files: dict, depth: int) -> list:
        """The files ``references`` name, compiled (each after its own references), added to
        ``files`` (by name, in import order) and returned."""
        from tidemark.protobuf_schemas import file_descriptor

        if depth > _MAX_REFERENCE_DEPTH:
            raise UnusableSchemaError(schema_id, f"its references nest deeper than {_MAX_REFERENCE_DEPTH}")
        compiled = []
        for reference in references:
            name = reference["name"]
            if name not in files:
                path = f"subjects/{quote(reference['subject'], safe='')}/versions/{reference['version']}"
                try:
                    answer = self._get(path, f"reference {name!r} of schema {schema_id}")
                except UnknownSchemaError:
                    raise UnusableSchemaError(
                        schema_id,
                        f"it imports {name!r}, which the registry does not hold as "
                        f"{reference['subject']!r} version {reference['version']}",
                    ) from None
                imports = self._references(schema_id, answer.get("references") or [], files, depth + 1)
                files[name] = file_descriptor(name, answer["schema"], imports)
            compiled.append(files[name])
        return compiled

    def subject_versions(self, subject: str) -> list[dict]:
        """Every version registered under ``subject``, oldest first: each the registry's answer
        (``version``, ``id``, ``schema``, ``schemaType``); [] for a subject it does not know."""
        path = f"subjects/{quote(subject, safe='')}/versions"
        try:
            numbers = self._get(path, f"the versions of {subject!r}")
        except UnknownSchemaError:
            return []
        return [self._get(f"{path}/{number}", f"version {number} of {subject!r}") for number in sorted(numbers)]

    def _schema(self, schema_id: int | str, query: str = "") -> dict:
        """The registry's answer for a schema by id, or by GUID (a record header's, Confluent's
        ``GET /schemas/guids/<guid>``)."""
        kind = "guids" if isinstance(schema_id, str) else "ids"
        return self._get(f"schemas/{kind}/{schema_id}{query}", f"schema {schema_id}")

    def _get(self, path: str, what: str) -> dict:
        """The registry's JSON answer at ``path``; UnknownSchemaError(…) for a 404 (``what`` names
        the thing asked for in the outage message)."""
        deadline = self._clock() + self._patience_s
        pause = 0.2
        while True:
            self.asked += 1
            request = urllib.request.Request(f"{self.url}/{path}", headers=self._access.headers())
            try:
                with urllib.request.urlopen(request, timeout=_REQUEST_TIMEOUT_S) as answer:
                    return json.load(answer)
            except urllib.error.HTTPError as error:
                if error.code == 404:
                    raise UnknownSchemaError(_asked_id(path)) from None
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
                    f"the schema registry at {self.url} {problem} for {what}, "
                    f"for {self._patience_s:.0f} s: the batch fails and is retried, nothing is quarantined"
                )
            self._sleep(pause)
            pause = min(pause * 2, 5.0)


def _asked_id(path: str) -> int | str:
    """The schema id (or GUID) a 404's path asked for (-1 for a subject's version: the caller names it)."""
    head = path.split("?")[0]
    if head.startswith("schemas/guids/"):
        return head.rsplit("/", 1)[1]
    return int(head.rsplit("/", 1)[1]) if head.startswith("schemas/ids/") else -1


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
