"""The alarm inbox of the embedded stack: a webhook receiver on 127.0.0.1 that the shipped
streams' alarms go to, with a page listing them.

Runs ``python -m stack.alarm_inbox_server --port <port> --folder $TIDEMARK_HOME/inbox``
(``TIDEMARK_INBOX_PORT``, default 19490) detached, its pid and log beside what it keeps:

    alarms.jsonl            every alarm received (stack.alarm_inbox_file)
    inbox.pid, inbox.out    the server's pid and its one line per request

The embedded environment defines the Airflow HTTP connection ``tidemark_inbox`` to it
(stack.environment), and conf/streams.yaml names that connection in each stream's ``alerts:``,
so an alarm arrives here without any set-up. It keeps what it received across restarts; delete
alarms.jsonl to empty it.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from stack.alarm_inbox_file import ALARMS_FILE, read_alarms
from stack.daemon import Daemon
from stack.environment import LOOPBACK, inbox_port, tidemark_home
from stack.errors import StackError
from stack.ports import port_answers, require_free


@dataclass(frozen=True)
class AlarmInbox:
    """The embedded alarm inbox: its folder and port. ``start`` and ``stop`` are idempotent; both
    raise ``StackError`` on expected failures."""

    folder: Path
    port: int

    title: ClassVar[str] = f"the alarm inbox (a webhook receiver on {LOOPBACK})"

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> AlarmInbox:
        return cls(folder=tidemark_home(environ=environ) / "inbox", port=inbox_port(environ))

    @property
    def url(self) -> str:
        """The page listing the alarms received."""
        return f"http://{LOOPBACK}:{self.port}/"

    @property
    def alarms_file(self) -> Path:
        return self.folder / ALARMS_FILE

    @property
    def daemon(self) -> Daemon:
        return Daemon("inbox", self.folder / "inbox.pid", self.folder / "inbox.out", self._marker)

    @property
    def _marker(self) -> str:
        return f"stack.alarm_inbox_server --port {self.port}"

    def start(self, timeout_s: float = 15.0) -> str:
        """Start the server and wait until it answers; returns a message."""
        if self.daemon.pid() is None:
            require_free(self.port, "alarm inbox", "TIDEMARK_INBOX_PORT")
            self.folder.mkdir(parents=True, exist_ok=True)
            self.daemon.launch(
                [sys.executable, "-m", *self._marker.split(), "--folder", str(self.folder)],
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
                cwd=self.folder,
            )
            if not self._wait_answering(timeout_s):
                tails = self.daemon.log_tail(20)
                self.daemon.stop(timeout_s=10)
                raise StackError(
                    f"The alarm inbox did not answer on {self.url} within {timeout_s:.0f} s; last lines:\n{tails}"
                )
            return f"Alarm inbox started on {self.url} (alarms kept in {self.alarms_file})."
        if self._wait_answering(timeout_s):
            return f"Alarm inbox is already running on {self.url}."
        raise StackError(
            f"The alarm inbox (pid {self.daemon.pid()}) runs but does not answer on {self.url}; "
            f"see {self.daemon.log_file}, or restart it with `tidemark down inbox`."
        )

    def stop(self, timeout_s: float = 15.0) -> str:
        if self.daemon.stop(timeout_s):
            return "Alarm inbox stopped (what it received stays in its folder)."
        return "Alarm inbox is not running."

    def status(self) -> str:
        pid = self.daemon.pid()
        if pid is None:
            return "inbox: not running"
        answering = "answering" if self.is_answering() else "NOT answering"
        return f"inbox: running (pid {pid}) on {self.url}, {answering}, {len(self.alarms())} alarms received"

    def is_running(self) -> bool:
        return self.daemon.is_running()

    def is_answering(self) -> bool:
        return port_answers(self.port)

    def alarms(self) -> list[dict]:
        """Every alarm received, oldest first (stack.alarm_inbox_file)."""
        return read_alarms(self.folder)

    def _wait_answering(self, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.is_answering():
                return True
            if self.daemon.pid() is None:
                return False
            time.sleep(0.2)
        return False
