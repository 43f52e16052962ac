"""Start, stop and check the embedded Airflow 3 (SQLite, LocalExecutor) on 127.0.0.1.

The components run under ``stack.airflow_components`` (our ``airflow standalone``, see
there why not Airflow's own), detached, with the embedded environment. Files in
``$AIRFLOW_HOME`` (``$TIDEMARK_HOME/airflow``):

    standalone.pid, standalone.log      the supervising process
    logs/stack/<component>.log          api-server, scheduler, dag-processor, triggerer
    simple_auth_manager_passwords.json.generated
                                        {"admin": "<password>"}: the SimpleAuthManager's
                                        password file, written by the first start
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from stack.airflow_components import component_log
from stack.daemon import Daemon, tail
from stack.environment import LOOPBACK, REPO_ROOT, embedded_environment
from stack.errors import StackError
from stack.ports import require_free

HEALTH_PATH = "/api/v2/monitor/health"
PASSWORDS_FILE = "simple_auth_manager_passwords.json.generated"


@dataclass(frozen=True)
class AirflowStandalone:
    """The embedded Airflow: its home, the API server's port, the environment it runs with.

    ``start`` and ``stop`` are idempotent; both raise ``StackError`` on expected failures.
    """

    airflow_home: Path
    port: int
    environment: Mapping[str, str] = field(repr=False)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> AirflowStandalone:
        env = dict(os.environ if environ is None else environ)
        env.update(embedded_environment(environ=env))
        return cls(
            airflow_home=Path(env["AIRFLOW_HOME"]),
            # The port Airflow itself will read, which a user may have set directly.
            port=int(env["AIRFLOW__API__PORT"]),
            environment=env,
        )

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def daemon(self) -> Daemon:
        return Daemon(
            "airflow",
            self.airflow_home / "standalone.pid",
            self.airflow_home / "standalone.log",
            "stack.airflow_components",
        )

    @property
    def password_file(self) -> Path:
        configured = self.environment.get("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE")
        return Path(configured) if configured else self.airflow_home / PASSWORDS_FILE

    def start(self, timeout_s: float = 120.0) -> str:
        """Start Airflow and wait until the API server answers; returns a message with the login.

        The first start of a fresh ``AIRFLOW_HOME`` migrates the database and takes longest.
        """
        if self.daemon.pid() is not None:
            if self._wait_answering(timeout_s):
                return f"Airflow is already running at {self.url}. {self._login()}"
            raise StackError(
                f"Airflow runs but its API server does not answer at {self.url}; see "
                f"{self.daemon.log_file}, or restart it with `tidemark down airflow`."
            )
        require_free(self.port, "Airflow API server", "TIDEMARK_AIRFLOW_PORT")
        self.airflow_home.mkdir(parents=True, exist_ok=True)
        self._create_password_file_once()
        self.daemon.launch(
            [sys.executable, "-m", "stack.airflow_components"],
            env=self.environment,
            cwd=REPO_ROOT,  # so `-m stack...` imports this checkout's package
        )
        if not self._wait_answering(timeout_s):
            tails = self._log_tails()
            self.daemon.stop(timeout_s=45)
            raise StackError(
                f"Airflow's API server did not answer at {self.url} within {timeout_s:.0f} s; last log lines:\n{tails}"
            )
        return f"Airflow started at {self.url}. {self._login()}"

    def stop(self, timeout_s: float = 45.0) -> str:
        """Stop every Airflow process (the whole process group, task processes included)."""
        if not self.daemon.stop(timeout_s):
            return "Airflow is not running."
        return "Airflow stopped."

    def is_running(self) -> bool:
        return self.daemon.is_running()

    def status(self) -> str:
        pid = self.daemon.pid()
        if pid is None:
            return "airflow: not running"
        health = self.health()
        if health is None:
            return f"airflow: running (pid {pid}), API server NOT answering at {self.url}"
        components = ", ".join(
            f"{name} {(value or {}).get('status', 'unknown')}" for name, value in sorted(health.items())
        )
        return f"airflow: running (pid {pid}) at {self.url}: {components}"

    def health(self) -> dict | None:
        """The API server's health report (metadatabase, scheduler, triggerer, dag_processor)."""
        try:
            with urllib.request.urlopen(self.url + HEALTH_PATH, timeout=3) as response:
                return json.load(response)
        except (OSError, ValueError):  # URLError is an OSError; ValueError: not JSON yet
            return None

    def admin_password(self) -> str | None:
        """The generated password of the ``admin`` user, once the API server has created it."""
        try:
            return json.loads(self.password_file.read_text()).get("admin")
        except (FileNotFoundError, ValueError):
            return None

    def _create_password_file_once(self) -> None:
        """Write a password for each configured user, unless the file exists.

        The API server generates missing passwords itself, but also prints them into its log;
        a password written here first is only in this file (mode 600) and in what ``start``
        returns to the person who started the stack.
        """
        if self.password_file.exists():
            return
        users = self.environment.get("AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS", "admin:admin")
        names = [entry.split(":")[0].strip() for entry in users.split(",") if entry.strip()]
        passwords = {name: secrets.token_urlsafe(12) for name in names}
        self.password_file.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.password_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(json.dumps(passwords) + "\n")

    def _login(self) -> str:
        """The same line at every start, first or not, for every stream a demo runs: the admin
        password read from its file (mode 600), as the demo's last lines print it too."""
        password = self.admin_password()
        if password is None:
            return (
                f"Login as admin: {self.password_file} holds no admin password; remove it and restart Airflow "
                f"(`tidemark down airflow`, then `tidemark up`) to have one made."
            )
        return f"Login: admin / {password} (kept in {self.password_file})."

    def _wait_answering(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.daemon.is_running():
                raise StackError(
                    f"Airflow exited during start-up (see {self.daemon.log_file}); last log lines:\n"
                    + self._log_tails()
                )
            if self.health() is not None:
                return True
            time.sleep(1.0)
        return False

    def _log_tails(self) -> str:
        text = self.daemon.log_tail(10)
        api_log = component_log(self.airflow_home, "api-server")
        if api_log.exists():
            text += f"\n--- {api_log}\n" + tail(api_log, 15)
        return text
