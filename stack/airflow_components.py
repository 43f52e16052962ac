"""Our ``airflow standalone``: the four Airflow 3 components under one supervising process.

Run as ``python -m stack.airflow_components`` by ``stack.airflow_standalone``, detached, with
the embedded environment. It does what ``airflow standalone`` does (Airflow 3.3.2):
migrate the metadata database, then run api-server, scheduler, dag-processor and triggerer
with SQLite and the LocalExecutor. It differs in two ways, both on purpose:

* scheduler and triggerer get ``--skip-serve-logs``. ``airflow standalone`` cannot pass it,
  and their log servers (ports 8793/8794) bind to every interface with no setting to change
  that; every server of the embedded stack binds to 127.0.0.1 only. Nothing is lost on one
  machine: the API server reads task logs straight from $AIRFLOW_HOME/logs.
* each component logs to its own file, $AIRFLOW_HOME/logs/stack/<component>.log, instead
  of one interleaved stream.

Contract: all components run in this process's process group. If one exits, the others are
stopped and this process exits 1, so a half-running Airflow never passes for a running one.
On SIGTERM or SIGINT it stops them all and exits 0.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

COMPONENTS: dict[str, list[str]] = {
    "api-server": ["api-server"],  # host and port from AIRFLOW__API__HOST / __PORT
    "scheduler": ["scheduler", "--skip-serve-logs"],
    "dag-processor": ["dag-processor"],
    "triggerer": ["triggerer", "--skip-serve-logs"],
}
STOP_TIMEOUT_S = 30.0


def component_log(airflow_home: Path, component: str) -> Path:
    """Where a component's stdout and stderr go."""
    return airflow_home / "logs" / "stack" / f"{component}.log"


def main() -> int:
    airflow_home = Path(os.environ["AIRFLOW_HOME"])
    stop_requested = False

    def request_stop(signum: int, frame: object) -> None:
        nonlocal stop_requested
        stop_requested = True

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)

    _say("migrating the metadata database (airflow db migrate)")
    # Before any component starts: on an empty SQLite file they would all race to create it.
    migrate = subprocess.run(["airflow", "db", "migrate"], stdin=subprocess.DEVNULL)
    if stop_requested:
        return 0
    if migrate.returncode != 0:
        _say(f"airflow db migrate failed with exit code {migrate.returncode}")
        return 1

    running: dict[str, subprocess.Popen[bytes]] = {}
    for name, arguments in COMPONENTS.items():
        log_path = component_log(airflow_home, name)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as log:
            running[name] = subprocess.Popen(
                ["airflow", *arguments], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        _say(f"started {name} (pid {running[name].pid}), log in {log_path}")

    exit_code = 0
    while not stop_requested:
        exited = {name: p.returncode for name, p in running.items() if p.poll() is not None}
        if exited:
            for name, code in exited.items():
                _say(f"{name} exited with code {code}; see {component_log(airflow_home, name)}")
            exit_code = 1
            break
        time.sleep(1.0)

    _say("stopping components")
    for process in running.values():
        if process.poll() is None:
            process.terminate()
    deadline = time.monotonic() + STOP_TIMEOUT_S
    for name, process in running.items():
        try:
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _say(f"{name} did not stop within {STOP_TIMEOUT_S:.0f} s; killing it")
            process.kill()
            process.wait()
    _say("stopped")
    return exit_code


def _say(message: str) -> None:
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} airflow_components: {message}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
