"""Following a DAG run from the CLI: task states, the backfill job's progress read from the task's
log as it grows (only the new part each poll), and a failed run explained with the exception and
where the log is. A loopback HTTP server plays Airflow's REST API; the client is the real one."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlparse

import pytest
from rich.console import Console

from harness.json_http import send_json
from stack.airflow_api import AirflowApi
from tidemark.backfill_progress import BackfillProgress, ProgressReport
from tidemark_cli.airflow_connection import AirflowConnection
from tidemark_cli.command_failed import CommandFailed
from tidemark_cli.run_display import follow_run, print_failure
from tidemark_cli.run_follower import RunFollower, progress_report
from tidemark_cli.task_failure import failure_message

DAG = "tidemark_backfill__telemetry"
RUN = "tidemark_cli__2026-11-23T10:00:00+00:00"


def _progress_line(done: int, total: int, records: int, partitions: str, left) -> str:
    # What the job writes (spark_jobs/json_log.py) and Airflow's Spark hook logs as one record's text.
    return json.dumps(
        {
            "level": "INFO",
            "logger": "tidemark.backfill",
            "event": "backfill_progress",
            "stream": "telemetry",
            "target": "shadow:x",
            "percent": round(100 * done / total, 1),
            "offsets_done": done,
            "offsets_total": total,
            "records": records,
            "partitions_done": partitions,
            "records_per_second": 500,
            "estimated_seconds_left": left,
        }
    )


def _task(task_id: str, state: str | None, try_number: int = 1, map_index: int = -1) -> dict:
    return {"task_id": task_id, "state": state, "try_number": try_number if state else 0, "map_index": map_index}


class PlayedAirflow(BaseHTTPRequestHandler):
    """Answers as Airflow's API does for one run; the Nth look at the run sees ``polls[N]``."""

    polls: list[tuple[str, list[dict]]] = []  # (run state, task instances)
    log_pages: dict[str | None, tuple[list[dict], str | None]] = {}  # token -> (records, next token)
    requests: list[str] = []
    looks = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._send(201, {"access_token": "t"})

    def do_GET(self) -> None:
        url = urlparse(self.path)
        path = unquote(url.path)
        self.requests.append(self.path)
        cls = type(self)
        if path == f"/api/v2/dags/{DAG}/dagRuns/{RUN}":
            cls.looks += 1
            self._send(200, {"dag_run_id": RUN, "state": cls._look()[0]})
        elif path == f"/api/v2/dags/{DAG}/dagRuns/{RUN}/taskInstances":
            tasks = cls._look()[1]
            self._send(200, {"task_instances": tasks, "total_entries": len(tasks)})
        elif path.startswith(f"/api/v2/dags/{DAG}/dagRuns/{RUN}/taskInstances/backfill/logs/1"):
            token = parse_qs(url.query).get("token", [None])[0]
            records, following = cls.log_pages[token]
            self._send(200, {"content": records, "continuation_token": following})
        else:
            self._send(404, {"detail": "not found"})

    @classmethod
    def _look(cls) -> tuple[str, list[dict]]:
        """What the current look at the run sees (the last one again once they run out)."""
        return cls.polls[min(max(cls.looks, 1), len(cls.polls)) - 1]

    def _send(self, status: int, body: dict) -> None:
        send_json(self, status, body)

    def log_message(self, *args) -> None:
        """Requests are recorded in ``requests``, not printed."""


@pytest.fixture
def airflow(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), PlayedAirflow)
    PlayedAirflow.requests, PlayedAirflow.looks = [], 0
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    yield AirflowConnection(AirflowApi(url, "admin", "pw", retries=0), url, tmp_path / "airflow")
    server.shutdown()


def _play_a_backfill_that_succeeds() -> None:
    PlayedAirflow.polls = [
        ("queued", [_task("validate", None), _task("backfill", None), _task("verdict", None)]),
        ("running", [_task("validate", "success"), _task("backfill", "running"), _task("verdict", None)]),
        ("running", [_task("validate", "success"), _task("backfill", "running"), _task("verdict", None)]),
        ("success", [_task("validate", "success"), _task("backfill", "success"), _task("verdict", "success")]),
    ]
    PlayedAirflow.log_pages = {
        None: ([{"event": "Submitting spark job"}, {"event": _progress_line(100, 400, 90, "0/2", 30)}], "page-2"),
        "page-2": ([{"event": _progress_line(300, 400, 280, "1/2", 10)}, {"event": "batch 3"}], "page-3"),
        "page-3": ([{"event": _progress_line(400, 400, 370, "2/2", None)}], None),
    }


def test_the_follower_reads_task_states_and_the_newest_progress_reading_only_new_log_lines(airflow):
    _play_a_backfill_that_succeeds()
    follower = RunFollower(airflow.api, DAG, RUN, progress_task="backfill")

    queued = follower.poll()
    first = follower.poll()
    second = follower.poll()
    last = follower.poll()

    assert (queued.state, queued.tasks_finished, len(queued.tasks), queued.progress) == ("queued", 0, 3, None)
    assert (first.running, first.tasks_finished) == (("backfill",), 1)
    assert first.progress == ProgressReport(100, 400, 90, 0, 2, 500.0, 30.0)
    assert second.progress == ProgressReport(300, 400, 280, 1, 2, 500.0, 10.0)
    assert last.finished and last.tasks_finished == 3 and last.failed_tasks == ()
    assert last.progress == ProgressReport(400, 400, 370, 2, 2, 500.0, None)
    logs = [request for request in PlayedAirflow.requests if "/logs/" in request]
    assert [parse_qs(urlparse(r).query).get("token") for r in logs] == [None, ["page-2"], ["page-3"]]


def test_follow_run_shows_the_tasks_and_the_offsets_read_until_the_run_ends(airflow):
    _play_a_backfill_that_succeeds()
    console = Console(record=True, width=120, force_terminal=False)
    naps = []

    last = follow_run(console, RunFollower(airflow.api, DAG, RUN, "backfill"), airflow, poll_s=2.0, sleep=naps.append)

    assert last.state == "success" and naps == [2.0, 2.0, 2.0]
    shown = console.export_text()
    tasks_line = next(line for line in shown.splitlines() if line.lstrip("✓ ").startswith("tasks"))
    offsets_line = next(line for line in shown.splitlines() if "offsets read" in line)
    assert "100%" in tasks_line and "success" in tasks_line
    assert "100%" in offsets_line and "370 records, partitions 2/2" in offsets_line


def test_a_failed_run_names_the_task_its_exception_and_where_its_log_is(airflow, capsys):
    message = "Backfill refused before any work: param 'end': the range is past retention"
    PlayedAirflow.polls = [
        ("failed", [_task("validate", "success"), _task("backfill", "failed"), _task("verdict", "upstream_failed")])
    ]
    PlayedAirflow.log_pages = {
        None: (
            [
                {"event": "spark-submit exited with 1", "level": "error"},
                {
                    "event": "Task failed with exception",
                    "level": "error",
                    "error_detail": [{"exc_type": "AirflowFailException", "exc_value": message, "frames": []}],
                },
                {"event": "Marking task as FAILED", "level": "info"},
            ],
            None,
        ),
    }
    log_file = airflow.airflow_home / "logs" / f"dag_id={DAG}" / f"run_id={RUN}" / "task_id=backfill" / "attempt=1.log"
    log_file.parent.mkdir(parents=True)
    log_file.write_text("{}\n")
    console = Console(record=True, width=400)

    snapshot = RunFollower(airflow.api, DAG, RUN).poll()
    print_failure(console, airflow, DAG, RUN, snapshot)

    assert console.export_text().splitlines() == [
        f"The run {RUN} of {DAG} failed.",
        "  task backfill failed (try 1)",
        f"    AirflowFailException: {message}",
        f"    log: {log_file}",
        f"    in the UI: {airflow.url}/dags/{DAG}/runs/tidemark_cli__2026-11-23T10%3A00%3A00%2B00%3A00/tasks/backfill",
        "  not run because of the failure: verdict",
    ]


def test_losing_airflow_while_following_says_the_run_may_go_on_and_where_to_see_it(airflow):
    class Unreachable:
        def run_state(self, dag_id, run_id):
            from stack.errors import StackError

            raise StackError("Airflow API at http://127.0.0.1:1 is not reachable: Connection refused")

    follower = RunFollower(Unreachable(), DAG, RUN)

    with pytest.raises(
        CommandFailed, match=r"The run may go on; see http://127\.0\.0\.1:\d+/dags/tidemark_backfill__telemetry/runs/"
    ):
        follow_run(Console(record=True), follower, airflow, sleep=lambda s: None)


def test_a_progress_report_survives_the_log_line_it_travels_in():
    clock = iter([0.0, 10.0])
    tracker = BackfillProgress({0: (0, 1000), 1: (0, 500)}, clock=lambda: next(clock))
    tracker.batch_read({0: 200, 1: 100}, records=300)
    report = tracker.batch_read({0: 1000, 1: 300}, records=1000)
    line = json.dumps({"level": "INFO", "event": "backfill_progress", **report.to_json()})

    assert progress_report(line) == report
    assert progress_report("[2026-11-23 10:00:00] INFO - " + line) == report  # a prefix before the object
    assert progress_report(line.replace("backfill_progress", "backfill_finished")) is None
    assert progress_report('{"event": "backfill_progress", "percent": 5}') is None  # not a whole report
    assert progress_report("backfill_progress was logged") is None


def test_a_failed_spark_submit_is_shown_by_its_command_and_its_last_lines():
    command = "Cannot execute: spark-submit " + "--conf x=y " * 40
    output = [f"line {n}" for n in range(1, 21)]
    record = {
        "event": "Task failed with exception",
        "level": "error",
        "error_detail": [{"exc_type": "AirflowException", "exc_value": command + "\n" + "\n".join(output)}],
    }

    message = failure_message([{"event": "starting"}, record], head_chars=60, tail_lines=3).splitlines()

    assert message == [
        f"AirflowException: {command}"[:60] + " …",
        "… (17 lines more in the log)",
        "line 18",
        "line 19",
        "line 20",
    ]
    assert failure_message([{"event": "no exception", "level": "info"}]) is None
    assert failure_message([{"event": "spark-submit exited with 1", "level": "error"}]) == "spark-submit exited with 1"
