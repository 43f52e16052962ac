"""The embedded Airflow, as the commands that start DAG runs reach it: up, logged in, its DAG parsed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from stack.airflow_api import AirflowApi
from stack.airflow_standalone import AirflowStandalone
from tidemark_cli.command_failed import CommandFailed


@dataclass(frozen=True)
class AirflowConnection:
    """A logged-in client of the embedded Airflow, and where a person finds a run and its logs."""

    api: AirflowApi
    url: str
    airflow_home: Path

    def run_url(self, dag_id: str, run_id: str) -> str:
        return f"{self.url}/dags/{dag_id}/runs/{quote(run_id, safe='')}"

    def task_url(self, dag_id: str, run_id: str, task_id: str) -> str:
        return f"{self.run_url(dag_id, run_id)}/tasks/{task_id}"

    def task_log_file(
        self, dag_id: str, run_id: str, task_id: str, try_number: int, map_index: int = -1
    ) -> Path | None:
        """The task try's log file on this machine (Airflow's default log layout), if it is there."""
        folder = self.airflow_home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={task_id}"
        if map_index >= 0:
            folder = folder / f"map_index={map_index}"
        path = folder / f"attempt={try_number}.log"
        return path if path.is_file() else None


def connect_to_airflow() -> AirflowConnection:
    """Log in to the embedded Airflow; CommandFailed saying how to start it when it does not answer."""
    airflow = AirflowStandalone.from_environment()
    if airflow.health() is None:
        raise CommandFailed(
            f"Airflow does not answer at {airflow.url}: the stack is not up. Start it with `tidemark up` "
            "(or `make up`), then run this command again."
        )
    password = airflow.admin_password()
    if password is None:
        raise CommandFailed(
            f"Airflow answers at {airflow.url} but has no admin password in {airflow.password_file}; "
            "restart it with `tidemark down` and `tidemark up`."
        )
    return AirflowConnection(AirflowApi(airflow.url, "admin", password), airflow.url, airflow.airflow_home)


def ready_dag(connection: AirflowConnection, dag_id: str, unpause: bool) -> None:
    """Wait until ``dag_id`` is parsed, and make sure a run of it would start: a paused DAG's run
    waits in the queue forever, so a paused DAG is unpaused only when ``unpause`` says so."""
    connection.api.wait_for_dag(dag_id, timeout_s=60)
    if not connection.api.is_paused(dag_id):
        return
    if not unpause:
        raise CommandFailed(
            f"The DAG {dag_id} is paused, so its run would wait in the queue. Run this again with --unpause, "
            f"or unpause it in the Airflow UI: {connection.url}/dags/{dag_id}"
        )
    connection.api.unpause(dag_id)
