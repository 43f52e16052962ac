"""A Spark standalone cluster on loopback: one master and one worker from the pip pyspark.

pyspark from PyPI ships the whole Spark distribution (``bin/spark-class``, the jars), so no
separate Spark download is needed. The master listens on ``spark://127.0.0.1:<master_port>``
and serves its state as JSON at ``http://127.0.0.1:<webui_port>/json/``; the worker offers
``cores`` cores and ``memory`` to the master's applications. State lives under ``state_dir``:

    master.log, master.pid    the master's JVM output and pid
    worker.log, worker.pid    the worker's; executors are its children (same process group)
    work/                     the worker's work folder: one folder per application and executor,
                              with each executor's stdout and stderr
    conf/                     an empty SPARK_CONF_DIR, so a developer's own Spark settings stay out

This is the smallest real cluster a test can run a job on: client deploy mode, the driver where
spark-submit runs, executors started by the worker. It is not part of ``make up``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from stack.daemon import Daemon
from stack.environment import LOOPBACK
from stack.errors import StackError
from stack.ports import port_is_free

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
# The master and worker only schedule; Spark's default of 1g each is more than they use.
DAEMON_MEMORY = "512m"


def pyspark_home() -> Path:
    """The Spark distribution inside the installed pyspark package (has ``bin/spark-class``)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise StackError("pyspark is not installed in this Python; run from the project's venv.")
    return Path(spec.origin).parent


@dataclass(frozen=True)
class SparkStandalone:
    """One master and one worker. ``start`` waits until the worker has registered with the
    master; ``stop`` ends both (worker first, its executors with it). Both raise ``StackError``
    on expected failures: a port in use, a JVM that exits or does not answer in time.

    ``environment`` is what the JVMs start with (the caller's environment by default); executors
    inherit the worker's, so its PYTHONPATH is what a job's Python workers see besides what the
    job ships itself.
    """

    state_dir: Path
    master_port: int
    webui_port: int
    worker_webui_port: int
    cores: int = 1
    memory: str = "1g"
    spark_home: Path = field(default_factory=pyspark_home)
    environment: Mapping[str, str] | None = field(default=None, repr=False)

    @property
    def master_url(self) -> str:
        return f"spark://{LOOPBACK}:{self.master_port}"

    @property
    def webui_url(self) -> str:
        return f"http://{LOOPBACK}:{self.webui_port}"

    @property
    def worker_webui_url(self) -> str:
        return f"http://{LOOPBACK}:{self.worker_webui_port}"

    @property
    def work_dir(self) -> Path:
        return self.state_dir / "work"

    @property
    def master(self) -> Daemon:
        # The marker holds the port: unique to this master among all on the machine.
        return Daemon(
            "spark-master",
            self.state_dir / "master.pid",
            self.state_dir / "master.log",
            f"{MASTER_CLASS} --host {LOOPBACK} --port {self.master_port}",
        )

    @property
    def worker(self) -> Daemon:
        return Daemon(
            "spark-worker",
            self.state_dir / "worker.pid",
            self.state_dir / "worker.log",
            f"{WORKER_CLASS} --host {LOOPBACK} --webui-port {self.worker_webui_port}",
        )

    def start(self, timeout_s: float = 90.0) -> str:
        """Start the master, then the worker; returns once the master lists the worker ALIVE."""
        spark_class = self.spark_home / "bin" / "spark-class"
        if not spark_class.is_file():
            raise StackError(f"{spark_class} not found: is pyspark installed completely? Reinstall it with pip.")
        for port, what in (
            (self.master_port, "master"),
            (self.webui_port, "master web UI"),
            (self.worker_webui_port, "worker web UI"),
        ):
            if not port_is_free(port):
                raise StackError(
                    f"Port {port} on {LOOPBACK} (Spark {what}) is already in use by another program; "
                    "stop it or start the cluster on other ports (stack.ports.free_port finds free ones)."
                )
        (self.state_dir / "conf").mkdir(parents=True, exist_ok=True)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        environment = self._jvm_environment()

        self.master.launch(
            [
                str(spark_class),
                MASTER_CLASS,
                "--host",
                LOOPBACK,
                "--port",
                str(self.master_port),
                "--webui-port",
                str(self.webui_port),
            ],
            env=environment,
            cwd=self.state_dir,
        )
        self._wait(self.master, lambda state: state.get("status") == "ALIVE", "answer as ALIVE", timeout_s)
        self.worker.launch(
            [
                str(spark_class),
                WORKER_CLASS,
                "--host",
                LOOPBACK,
                "--webui-port",
                str(self.worker_webui_port),
                "--cores",
                str(self.cores),
                "--memory",
                self.memory,
                "--work-dir",
                str(self.work_dir),
                self.master_url,
            ],
            env=environment,
            cwd=self.state_dir,
        )
        self._wait(self.worker, lambda state: state.get("aliveworkers", 0) >= 1, "list the worker ALIVE", timeout_s)
        return f"Spark master at {self.master_url} (UI {self.webui_url}), one worker with {self.cores} cores, {self.memory}."

    def stop(self, timeout_s: float = 30.0) -> str:
        """Stop the worker (and any executor it runs), then the master; idempotent."""
        stopped = [
            name for name, daemon in (("worker", self.worker), ("master", self.master)) if daemon.stop(timeout_s)
        ]
        return f"Spark {' and '.join(stopped)} stopped." if stopped else "Spark standalone is not running."

    def state(self) -> dict | None:
        """The master's JSON (``status``, ``workers``, ``activeapps``, ``completedapps``...),
        or None while it does not answer."""
        return _get_json(self.webui_url + "/json/")

    def worker_state(self) -> dict | None:
        """The worker's JSON (``executors``, ``finishedexecutors``...), or None."""
        return _get_json(self.worker_webui_url + "/json/")

    def _jvm_environment(self) -> dict[str, str]:
        environment = dict(os.environ if self.environment is None else self.environment)
        environment.update(
            SPARK_HOME=str(self.spark_home),
            SPARK_CONF_DIR=str(self.state_dir / "conf"),
            SPARK_LOCAL_IP=LOOPBACK,
            SPARK_DAEMON_MEMORY=DAEMON_MEMORY,
            SPARK_WORKER_DIR=str(self.work_dir),
        )
        return environment

    def _wait(self, daemon: Daemon, ready, what: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            if not daemon.is_running():
                self.stop()
                raise StackError(
                    f"The {daemon.name} exited during start-up (see {daemon.log_file}); last log lines:\n"
                    + daemon.log_tail(15)
                )
            state = self.state()
            if state is not None and ready(state):
                return
            if time.monotonic() >= deadline:
                tail = daemon.log_tail(15)
                self.stop()
                raise StackError(
                    f"The Spark master at {self.webui_url}/json/ did not {what} within {timeout_s:.0f} s "
                    f"after the {daemon.name} started (see {daemon.log_file}); last log lines:\n{tail}"
                )
            time.sleep(0.5)


def _get_json(url: str) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=3) as response:
            return json.load(response)
    except (OSError, ValueError):  # URLError is an OSError; ValueError: not JSON (yet)
        return None
