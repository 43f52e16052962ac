"""Why a task of a run failed, and where its log is: what a person needs to act on a failed run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from stack.errors import StackError
from tidemark_cli.airflow_connection import AirflowConnection
from tidemark_cli.run_follower import RunSnapshot, TaskState


@dataclass(frozen=True)
class TaskFailure:
    task: TaskState
    message: (
        str | None
    )  # the exception the task failed with ("AirflowFailException: param 'end': ..."); None: not found
    log_file: Path | None  # on this machine, when it is there
    url: str  # the task in the Airflow UI, its log one click away


def task_failures(connection: AirflowConnection, dag_id: str, run_id: str, snapshot: RunSnapshot) -> list[TaskFailure]:
    """Every task of the run that failed itself (not those skipped because one upstream failed)."""
    failures = []
    for task in snapshot.tasks:
        if task.state != "failed":
            continue
        failures.append(
            TaskFailure(
                task,
                _failure_message(connection, dag_id, run_id, task),
                connection.task_log_file(dag_id, run_id, task.task_id, task.try_number, task.map_index),
                connection.task_url(dag_id, run_id, task.task_id),
            )
        )
    return failures


def failure_message(records: list[dict], head_chars: int = 240, tail_lines: int = 3) -> str | None:
    """The last exception in a task's log records (Airflow's ``error_detail``), else the last
    error line; None when the log holds neither.

    A failed spark-submit's exception holds the whole command line and the job's output: the
    message keeps its first line (cut at ``head_chars``) and its last ``tail_lines`` lines, where
    the job's own error is; the log file has the rest.
    """
    message = None
    for record in records:
        details = record.get("error_detail")
        if isinstance(details, list) and details and isinstance(details[0], dict):
            message = f"{details[0].get('exc_type', 'error')}: {details[0].get('exc_value', '')}".rstrip(": ")
        elif str(record.get("level", "")).lower() == "error" and record.get("event"):
            message = str(record["event"])
    if message is None:
        return None
    lines = message.splitlines()
    first = lines[0] if len(lines[0]) <= head_chars else lines[0][:head_chars] + " …"
    if len(lines) <= tail_lines + 1:
        return "\n".join([first, *lines[1:]])
    return "\n".join([first, f"… ({len(lines) - 1 - tail_lines} lines more in the log)", *lines[-tail_lines:]])


def _failure_message(connection: AirflowConnection, dag_id: str, run_id: str, task: TaskState) -> str | None:
    if task.try_number < 1:
        return None
    records: list[dict] = []
    token = None
    try:
        # A finished task's log: pages until the API says it is complete.
        for _ in range(100):
            page, token = connection.api.task_log(dag_id, run_id, task.task_id, task.try_number, token, task.map_index)
            records.extend(page)
            if token is None or not page:
                break
    except StackError:
        return None
    return failure_message(records)
