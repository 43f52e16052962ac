"""Where a DAG run stands: its state, its tasks' states, and the progress its job reports.

The backfill job logs a ``backfill_progress`` line after every batch (tidemark.backfill_progress:
offsets read of the planned ranges, records, the time left); the task's log carries it, and
Airflow's REST API serves the log while the task runs. The follower reads only what is new since
its last poll (the API's continuation token), so an 8 MB log is read once, not every poll.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Protocol

from stack.errors import StackError
from tidemark.backfill_progress import ProgressReport

RUN_FINISHED = ("success", "failed")
TASK_FINISHED = ("success", "failed", "skipped", "upstream_failed", "removed")
TASK_FAILED = ("failed", "upstream_failed")


class AirflowRuns(Protocol):
    """What the follower needs from Airflow's REST API (stack.airflow_api.AirflowApi has it)."""

    def run_state(self, dag_id: str, run_id: str) -> str: ...

    def task_instances(self, dag_id: str, run_id: str) -> list[dict]: ...

    def task_log(
        self, dag_id: str, run_id: str, task_id: str, try_number: int, token: str | None = None, map_index: int = -1
    ) -> tuple[list[dict], str | None]: ...


@dataclass(frozen=True)
class TaskState:
    task_id: str
    map_index: int  # -1: not mapped
    state: str | None  # None: not scheduled yet
    try_number: int  # 0: not started yet

    @property
    def finished(self) -> bool:
        return self.state in TASK_FINISHED

    @property
    def failed(self) -> bool:
        return self.state in TASK_FAILED


@dataclass(frozen=True)
class RunSnapshot:
    """One look at a run. ``progress`` is the newest progress report of the run's job, None
    before its first batch (or for a run whose job reports none)."""

    state: str
    tasks: tuple[TaskState, ...]
    progress: ProgressReport | None

    @property
    def finished(self) -> bool:
        return self.state in RUN_FINISHED

    @property
    def tasks_finished(self) -> int:
        return sum(task.finished for task in self.tasks)

    @property
    def running(self) -> tuple[str, ...]:
        """The ids of the tasks running now, in the API's order."""
        return tuple(dict.fromkeys(task.task_id for task in self.tasks if task.state == "running"))

    @property
    def failed_tasks(self) -> tuple[TaskState, ...]:
        return tuple(task for task in self.tasks if task.failed)


class RunFollower:
    """Polls one run of ``dag_id``. ``progress_task`` names the task whose job logs
    ``progress_event`` lines (None: the run reports only task states)."""

    def __init__(
        self,
        api: AirflowRuns,
        dag_id: str,
        run_id: str,
        progress_task: str | None = None,
        progress_event: str = "backfill_progress",
    ):
        self.api = api
        self.dag_id = dag_id
        self.run_id = run_id
        self._progress_task = progress_task
        self._progress_event = progress_event
        self._progress: ProgressReport | None = None
        # Per try of the progress task: where to read on (None before the first read), and
        # whether its log is complete.
        self._log_tokens: dict[int, str | None] = {}
        self._log_complete: set[int] = set()

    def poll(self) -> RunSnapshot:
        state = self.api.run_state(self.dag_id, self.run_id)
        tasks = tuple(
            TaskState(item["task_id"], item.get("map_index", -1), item.get("state"), item.get("try_number") or 0)
            for item in self.api.task_instances(self.dag_id, self.run_id)
        )
        for task in tasks:
            if task.task_id == self._progress_task and task.try_number > 0 and task.state is not None:
                self._read_progress(task)
        return RunSnapshot(state, tasks, self._progress)

    def _read_progress(self, task: TaskState) -> None:
        if task.try_number in self._log_complete:
            return
        try:
            records, token = self.api.task_log(
                self.dag_id,
                self.run_id,
                task.task_id,
                task.try_number,
                self._log_tokens.get(task.try_number),
                task.map_index,
            )
        except StackError:
            return  # no log yet (the task is starting): the bar shows task states until there is
        self._log_tokens[task.try_number] = token
        if token is None and task.finished:
            self._log_complete.add(task.try_number)
        for record in records:
            report = progress_report(record.get("event", ""), self._progress_event)
            if report is not None:
                self._progress = report


def progress_report(line: str, event: str = "backfill_progress") -> ProgressReport | None:
    """The progress report in one log line, or None when the line is not an ``event`` line.

    The job writes one JSON object per line; Airflow's Spark hook logs each line of the job's
    output as the text of one log record, so the line is the object, maybe after a prefix.
    """
    if event not in line:
        return None
    start = line.find("{")
    if start < 0:
        return None
    try:
        data = json.loads(line[start:])
        if not isinstance(data, dict) or data.get("event") != event:
            return None
        return ProgressReport.from_json(data)
    except (ValueError, KeyError, TypeError):
        return None
