"""A minimal client of Airflow 3's REST API (v2), for the demo and the ``tidemark`` CLI: log in,
unpause, trigger, follow a run (its state, its tasks' states, a task's log), wait.

Only the standard library, so it runs wherever the stack scripts run.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request

from stack.errors import StackError

_FINISHED = {"success", "failed"}
# Requests that can be sent again without doing anything twice.
_IDEMPOTENT = {"GET", "PATCH", "PUT"}


class AirflowApi:
    """``retries``: how often an idempotent request is sent again after a server error (HTTP 5xx),
    waiting ``retry_wait_s``, then twice that, and so on. The standalone Airflow keeps its state
    in SQLite, and a write there fails with "database is locked" (HTTP 500 "Database error")
    when the scheduler holds the lock longer than SQLite's timeout, as it does while DAG runs
    start. A trigger (POST) is never sent again: it could start a second run."""

    def __init__(
        self,
        base_url: str,
        username: str,
        password: str,
        timeout_s: float = 30.0,
        retries: int = 4,
        retry_wait_s: float = 2.0,
    ):
        self._base = base_url.rstrip("/")
        self._timeout_s = timeout_s
        self._retries = retries
        self._retry_wait_s = retry_wait_s
        token = self._call("POST", "/auth/token", {"username": username, "password": password}, authorized=False)
        self._token = token["access_token"]

    def wait_for_dag(self, dag_id: str, timeout_s: float = 180.0) -> None:
        """Wait until the DAG processor has parsed ``dag_id``; fail with its import error if any."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                self._call("GET", f"/api/v2/dags/{dag_id}")
                return
            except StackError:
                errors = self._call("GET", "/api/v2/importErrors").get("import_errors", [])
                if errors:
                    raise StackError(
                        f"Airflow could not import the DAGs: {errors[0].get('stack_trace', errors[0])}"
                    ) from None
                time.sleep(2)
        raise StackError(f"DAG {dag_id} did not appear in Airflow within {timeout_s:.0f}s")

    def is_paused(self, dag_id: str) -> bool:
        """Whether ``dag_id`` is paused: a run triggered then waits in the queue until it is not."""
        return bool(self._call("GET", f"/api/v2/dags/{dag_id}")["is_paused"])

    def unpause(self, dag_id: str) -> None:
        self._call("PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": False})

    def trigger(self, dag_id: str, conf: dict | None = None, run_id: str | None = None) -> str:
        """Start a run of ``dag_id`` with params ``conf``; returns its run id (``run_id``, or one
        Airflow makes up when None)."""
        body = {"logical_date": None, **({"conf": conf} if conf else {}), **({"dag_run_id": run_id} if run_id else {})}
        return self._call("POST", f"/api/v2/dags/{dag_id}/dagRuns", body)["dag_run_id"]

    def return_value(self, dag_id: str, run_id: str, task_id: str, map_index: int = -1):
        """What task ``task_id`` of the run returned (its XCom ``return_value``; ``map_index``: of
        a mapped task's instance), or None."""
        try:
            entry = self._call(
                "GET",
                f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/return_value"
                + (f"?map_index={map_index}" if map_index >= 0 else ""),
            )
        except StackError:
            return None
        value = entry.get("value")
        return json.loads(value) if isinstance(value, str) and value[:1] in "[{" else value

    def run_state(self, dag_id: str, run_id: str) -> str:
        """The run's state: queued, running, success or failed."""
        return self._call("GET", f"/api/v2/dags/{dag_id}/dagRuns/{_segment(run_id)}")["state"]

    def dag_runs(self, dag_id: str, limit: int = 100) -> list[dict]:
        """The newest ``limit`` runs of ``dag_id``, oldest first, as the API gives them
        (``dag_run_id``, ``state``, ``conf``, ``run_type``, ``queued_at``, ``start_date``, ...)."""
        path = f"/api/v2/dags/{dag_id}/dagRuns?order_by=-run_after&limit={limit}"
        return list(reversed(self._call("GET", path).get("dag_runs", [])))

    def task_instances(self, dag_id: str, run_id: str) -> list[dict]:
        """The run's task instances as the API gives them (``task_id``, ``map_index``, ``state``
        (None before it is scheduled), ``try_number``, ...); a mapped task has one per index."""
        path = f"/api/v2/dags/{dag_id}/dagRuns/{_segment(run_id)}/taskInstances?limit=1000"
        return self._call("GET", path).get("task_instances", [])

    def task_log(
        self, dag_id: str, run_id: str, task_id: str, try_number: int, token: str | None = None, map_index: int = -1
    ) -> tuple[list[dict], str | None]:
        """The records of a task try's log after ``token`` (None: from the start), and the token
        to read on from (None: the log is complete). A record has at least ``event`` (the text);
        Airflow's structured records add ``level``, ``timestamp`` and, on a failure,
        ``error_detail`` ([{"exc_type", "exc_value", ...}]). ``map_index``: the index of a mapped task."""
        arguments = {**({"token": token} if token else {}), **({"map_index": map_index} if map_index >= 0 else {})}
        query = f"?{urllib.parse.urlencode(arguments)}" if arguments else ""
        path = f"/api/v2/dags/{dag_id}/dagRuns/{_segment(run_id)}/taskInstances/{task_id}/logs/{try_number}{query}"
        answer = self._call("GET", path)
        records = [item if isinstance(item, dict) else {"event": str(item)} for item in answer.get("content") or []]
        return records, answer.get("continuation_token")

    def wait_for_run(self, dag_id: str, run_id: str, timeout_s: float = 900.0) -> str:
        """Poll the run until it succeeds or fails; returns the final state."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            state = self.run_state(dag_id, run_id)
            if state in _FINISHED:
                return state
            time.sleep(3)
        raise StackError(f"run {run_id} of {dag_id} did not finish within {timeout_s:.0f}s")

    def _call(self, method: str, path: str, body: dict | None = None, authorized: bool = True) -> dict:
        attempts = 1 + (self._retries if method in _IDEMPOTENT else 0)
        for attempt in range(attempts):
            try:
                return self._send(method, path, body, authorized)
            except _ServerError as error:
                if attempt == attempts - 1:
                    raise StackError(f"{error} (sent {attempt + 1} times)" if attempts > 1 else str(error)) from None
                time.sleep(self._retry_wait_s * 2**attempt)

    def _send(self, method: str, path: str, body: dict | None, authorized: bool) -> dict:
        request = urllib.request.Request(
            self._base + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json",
                **({"Authorization": f"Bearer {self._token}"} if authorized else {}),
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            message = f"Airflow API {method} {path}: HTTP {error.code} {error.read()[:300]!r}"
            raise (_ServerError if error.code >= 500 else StackError)(message) from None
        except urllib.error.URLError as error:
            raise StackError(f"Airflow API at {self._base} is not reachable: {error.reason}") from None


def _segment(value: str) -> str:
    """A run id as one path segment: run ids hold ':' and '+' ("manual__2026-11-22T10:00:00+00:00")."""
    return urllib.parse.quote(value, safe="")


class _ServerError(StackError):
    """HTTP 5xx: the server failed, the request may succeed when sent again."""
