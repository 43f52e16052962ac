"""The schema registry of the embedded stack and the tests: Apicurio Registry 3.0.9, in memory.

Listens on http://127.0.0.1:<port> (``TIDEMARK_REGISTRY_PORT``, default 19480); the Confluent
schema registry API that producers' serializers and tidemark's decoders speak is under
``/apis/ccompat/v7`` (``url``). Its state is its memory: schemas registered since it started.

    registry.out, registry.pid  the JVM's output and pid of the detached process

Why Apicurio: Confluent's own registry is not on Maven Central, Karapace is not on the Python
index; Apicurio's Quarkus app is one archive from Maven Central (connectors/jars.py, group
``registry``), and 3.0.9 is the last line that runs on Java 17. It answers the compatibility
API's calls tidemark makes (register a subject's version, read a schema by id); its version
numbers and some compatibility checks differ from Confluent's, so tests check what tidemark
uses, not the whole API.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from stack.daemon import Daemon
from stack.environment import LOOPBACK, jars_root, registry_port, tidemark_home
from stack.errors import StackError
from stack.ports import require_free

# Quarkus in memory: about 200 MB resident; the serial collector keeps two cores for the jobs.
JVM_OPTIONS = ("-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true")
COMPAT_PATH = "/apis/ccompat/v7"
JAVA_HINT = "install it with `apt-get install openjdk-17-jre-headless`"


@dataclass(frozen=True)
class SchemaRegistry:
    """The embedded registry: where its output goes, which archive runs it, which port it serves.
    ``start`` and ``stop`` are idempotent; both raise ``StackError`` on expected failures."""

    state_dir: Path
    jars_dir: Path
    port: int

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> SchemaRegistry:
        home = tidemark_home(environ=environ)
        return cls(state_dir=home / "registry", jars_dir=jars_root(environ), port=registry_port(environ))

    @property
    def url(self) -> str:
        """The Confluent-compatible API: what a stream's ``payload.registry_url`` names."""
        return f"http://{LOOPBACK}:{self.port}{COMPAT_PATH}"

    @property
    def daemon(self) -> Daemon:
        return Daemon("registry", self.state_dir / "registry.pid", self.state_dir / "registry.out", self._marker)

    @property
    def _marker(self) -> str:
        return f"-Dquarkus.http.port={self.port}"

    def start(self, timeout_s: float = 120.0) -> str:
        """Start the registry and wait until its API answers; returns a message."""
        if self.daemon.pid() is None:
            if shutil.which("java") is None:
                raise StackError(f"java not found on PATH; {JAVA_HINT}.")
            require_free(self.port, "schema registry", "TIDEMARK_REGISTRY_PORT")
            jar = self._jar()  # fetched by `tidemark jars`; the stack never fetches
            self.state_dir.mkdir(parents=True, exist_ok=True)
            settings = [f"-Dquarkus.http.host={LOOPBACK}", self._marker, "-Dquarkus.log.level=WARN"]
            self.daemon.launch(["java", *JVM_OPTIONS, *settings, "-jar", jar], env=dict(os.environ), cwd=self.state_dir)
            if not self._wait_answering(timeout_s):
                tails = self.daemon.log_tail(20)
                self.daemon.stop(timeout_s=10)
                raise StackError(f"The schema registry did not answer on {self.url} within {timeout_s:.0f} s:\n{tails}")
            started = "started"
        elif self._wait_answering(timeout_s):
            started = "already running"
        else:
            raise StackError(
                f"The schema registry (pid {self.daemon.pid()}) runs but does not answer on {self.url}; "
                f"see {self.daemon.log_file}, or restart it with `tidemark down registry`."
            )
        return f"Schema registry {started} on {self.url} (in memory)."

    def stop(self, timeout_s: float = 30.0) -> str:
        return "Schema registry stopped." if self.daemon.stop(timeout_s) else "Schema registry is not running."

    def status(self) -> str:
        pid = self.daemon.pid()
        if pid is None:
            return "registry: not running"
        return f"registry: running (pid {pid}) on {self.url}, {'answering' if self.is_answering() else 'NOT answering'}"

    def is_running(self) -> bool:
        return self.daemon.is_running()

    def is_answering(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/subjects", timeout=2) as response:
                return response.status == 200
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            return False

    def register(self, subject: str, schema: str, schema_type: str = "AVRO", references: list | None = None) -> int:
        """Register ``schema`` (its text) under ``subject``; returns its id (as a producer's serializer does)."""
        body = {"schema": schema, "schemaType": schema_type, "references": references or []}
        request = urllib.request.Request(
            f"{self.url}/subjects/{subject}/versions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(json.load(response)["id"])

    def _jar(self) -> str:
        jars = sorted((self.jars_dir / "registry").glob("*-runner.jar"))
        if not jars:
            raise StackError(f"No registry runner jar in {self.jars_dir / 'registry'}; run `tidemark jars` first.")
        return str(jars[0])

    def _wait_answering(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.daemon.is_running():
                raise StackError(f"The schema registry exited during start-up; last lines:\n{self.daemon.log_tail(20)}")
            if self.is_answering():
                return True
            time.sleep(0.3)
        return False
