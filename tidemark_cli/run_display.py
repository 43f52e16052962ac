"""A DAG run followed on the terminal: progress bars while it runs, then why it failed, if it did.

Two bars: the run's tasks (finished of all), and, once the job has reported progress, the
offsets it has read of its planned ranges, with records, partitions done and the job's own
estimate of the time left. Stopping to follow (Ctrl-C) leaves the run going on in Airflow.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TaskProgressColumn, TextColumn, TimeElapsedColumn

from stack.errors import StackError
from tidemark.backfill_progress import ProgressReport
from tidemark_cli.airflow_connection import AirflowConnection
from tidemark_cli.command_failed import CommandFailed
from tidemark_cli.run_follower import RunFollower, RunSnapshot
from tidemark_cli.task_failure import task_failures

EXIT_INTERRUPTED = 130


def follow_run(
    console: Console,
    follower: RunFollower,
    connection: AirflowConnection,
    poll_s: float = 2.0,
    sleep: Callable[[float], None] = time.sleep,
) -> RunSnapshot:
    """Poll the run until it ends, showing its progress; returns the last snapshot.

    CommandFailed when Airflow stops answering (the run may go on: the message gives its page).
    """
    run_page = connection.run_url(follower.dag_id, follower.run_id)
    columns = (
        SpinnerColumn(finished_text="✓"),
        TextColumn("{task.description:<13}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[detail]}"),
    )
    with Progress(*columns, console=console) as bars:
        tasks_bar = bars.add_task("tasks", total=None, detail="queued")
        offsets_bar = None
        while True:
            try:
                snapshot = follower.poll()
            except StackError as error:
                raise CommandFailed(
                    f"Lost contact with Airflow while following {follower.run_id}: {error}. The run may go on; see {run_page}"
                ) from None
            bars.update(tasks_bar, **_tasks_view(snapshot))
            if snapshot.progress is not None:
                if offsets_bar is None:
                    offsets_bar = bars.add_task("offsets read", total=None, detail="")
                bars.update(offsets_bar, **_offsets_view(snapshot.progress))
            if snapshot.finished:
                return snapshot
            sleep(poll_s)


def interrupted(console: Console, connection: AirflowConnection, dag_id: str, run_id: str) -> int:
    """Ctrl-C while following: the run is Airflow's, and goes on."""
    console.print(
        f"Stopped following. The run {escape(run_id)} goes on in Airflow: {connection.run_url(dag_id, run_id)}",
        soft_wrap=True,
    )
    return EXIT_INTERRUPTED


def print_failure(
    console: Console, connection: AirflowConnection, dag_id: str, run_id: str, snapshot: RunSnapshot
) -> None:
    """The failed tasks, each with the exception it failed with and where its log is."""
    # Unwrapped (soft_wrap): paths, addresses and the job's own lines must stay copyable.
    say = partial(console.print, highlight=False, soft_wrap=True)
    say(f"[bold red]The run {escape(run_id)} of {dag_id} failed.[/]")
    for failure in task_failures(connection, dag_id, run_id, snapshot):
        task = failure.task
        mapped = f"[{task.map_index}]" if task.map_index >= 0 else ""
        say(f"  task [bold]{task.task_id}{mapped}[/] failed (try {task.try_number})")
        for line in (failure.message or "").splitlines():
            say(f"    {escape(line)}")
        if failure.log_file:
            say(f"    log: {escape(str(failure.log_file))}")
        say(f"    in the UI: {failure.url}")
    skipped = sorted({task.task_id for task in snapshot.tasks if task.state == "upstream_failed"})
    if skipped:
        say(f"  not run because of the failure: {', '.join(skipped)}")


def _tasks_view(snapshot: RunSnapshot) -> dict:
    total = len(snapshot.tasks)
    detail = ", ".join(snapshot.running) if snapshot.running else snapshot.state
    return {"total": total or None, "completed": snapshot.tasks_finished, "detail": escape(detail)}


def _offsets_view(report: ProgressReport) -> dict:
    detail = f"{report.records:,} records, partitions {report.partitions_done}/{report.partitions}"
    if report.offsets_total is None:
        # Sequence numbers are not counts (Kinesis): the bar counts shards finished.
        return {"total": report.partitions or 1, "completed": report.partitions_done or 0, "detail": detail}
    # A plan with no offsets is done as soon as it starts: show a full bar, not an empty one.
    total = report.offsets_total or 1
    done = report.offsets_done if report.offsets_total else 1
    detail = f"{report.records:,} records, partitions {report.partitions_done}/{report.partitions}"
    if report.seconds_left is not None and report.offsets_done < report.offsets_total:
        detail += f", about {_duration(report.seconds_left)} left"
    return {"total": total, "completed": done, "detail": detail}


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
