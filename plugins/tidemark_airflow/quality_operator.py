"""Run a stream's quality checks (expectations/quality_run.py): a plain Python process for the
regular run (its facts are small and read without Spark), spark-submit for the sweep (a scan of
every hour the log retains)."""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tidemark.quality_summary import QualitySummary, quality_summary_builtins, read_quality_summary
from tidemark_airflow.spark_job_operator import TidemarkSparkJobOperator, reports_root


class QualityCheckOperator(TidemarkSparkJobOperator):
    """Checks ``hours`` (ISO hour starts, UTC; templated, may come from an upstream task) of
    ``stream``, plus, with ``reconcile``, every sealed hour in the seals table that has no report
    yet, so an hour whose asset event was lost is still checked. The stream-wide stall and
    retention checks run every time, also with no hour to check.

    Returns the run's summary (tidemark.quality_summary.QualitySummary, as plain JSON values for
    the XCom; readers convert it back with ``quality_summary_from``): per partition status, the
    recovery requests, and the paths of the summary (JSON, HTML) and of Data Docs, which the task
    log also shows. The task fails when the stream's tables do not exist (nothing is passed
    silently); checks that find problems do not fail it: the result says so, and the DAG acts on it.

    A regular run is ``sys.executable expectations/quality_run.py ...`` in a child process: no
    spark-submit, no JVM, no Spark connection needed. It gets this process's environment (the
    variables TidemarkSparkJobOperator forwards to spark-submit among them) with the lake's S3
    keys and the Kinesis source's keys from their Airflow connections, as ``submit()`` applies
    them, plus the operator's own ``env_vars``. Exit 2 (bad arguments or configuration, a missing
    table, a topic or stream that does not exist) fails the task without retries, naming the
    problem (the run's last lines); any other failure fails it as the task's retries say. A
    sweep (``sweep=True``) goes through spark-submit as every Spark job does.
    """

    template_fields = (*TidemarkSparkJobOperator.template_fields, "hours")

    def __init__(
        self,
        *,
        stream: str,
        conf_path: str,
        hours: Any = None,
        reconcile: bool = True,
        sweep: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(stream=stream, conf_path=conf_path, job="expectations/quality_run.py", **kwargs)
        if sweep and (reconcile or hours):
            raise ValueError("a sweep checks every hour the log retains: give it no hours and reconcile=False")
        self.hours = hours
        self.reconcile = reconcile
        self.sweep = sweep
        self._process: subprocess.Popen | None = None  # the regular run's child, while it runs

    def execute(self, context: Any) -> Any:
        stream = self.load_stream()
        hours = sorted(set(self.hours or []))
        reports = reports_root()
        run_name = re.sub(r"[^A-Za-z0-9_.:+-]", "_", f"{context['dag_run'].run_id}.{self.task_id}")
        with tempfile.TemporaryDirectory(prefix=f"tidemark-quality-{stream.name}-") as folder:
            result_path = Path(folder) / "result.json"
            arguments = [
                "--stream",
                stream.name,
                "--conf",
                self.conf_path,
                "--report-dir",
                str(reports),
                "--gx-dir",
                str(reports / stream.name / "gx"),
                "--run-name",
                run_name,
                "--result",
                str(result_path),
            ]
            if hours:
                arguments += ["--hours", ",".join(hours)]
            if self.reconcile:
                arguments += ["--reconcile"]
            if self.sweep:
                arguments += ["--sweep"]
            self.log.info(
                "Checking stream %s: hours %s%s",
                stream.name,
                hours or "none given",
                ", plus unchecked sealed hours" if self.reconcile else "",
            )
            if self.sweep:
                self.submit(context, arguments)
            else:
                self.run_checks(arguments)
            summary = read_quality_summary(result_path)
        for line in _report_lines(summary):
            self.log.info("%s", line)
        return quality_summary_builtins(summary)

    def run_checks(self, arguments: list[str]) -> None:
        """Run expectations/quality_run.py with ``arguments`` in a child Python process, its output
        in the task log; returns once it exited 0, raises otherwise (see the class)."""
        from airflow.sdk.exceptions import AirflowException, AirflowFailException

        self.apply_connections()
        command = [sys.executable, self.application, *arguments]
        code, tail = run_logged(command, {**os.environ, **(self.env_vars or {})}, self.log, self._track)
        if code == 0:
            return
        said = "\n".join(tail)
        if code == 2:
            raise AirflowFailException(f"The quality run of stream {self.stream} refused to run (exit 2):\n{said}")
        raise AirflowException(f"The quality run of stream {self.stream} failed (exit {code}):\n{said}")

    def _track(self, process: subprocess.Popen | None) -> None:
        self._process = process

    def on_kill(self) -> None:
        """Stop the child process of a regular run; a sweep's spark-submit as the provider stops it."""
        if stop_child(self._process):
            return
        if self.sweep:
            super().on_kill()


TAIL_LINES = 20  # lines of the run's output a failure's message repeats


def stop_child(process: subprocess.Popen | None) -> bool:
    """Terminate ``process`` when it still runs (killed after 10 s); whether there was one to stop."""
    if process is None or process.poll() is not None:
        return False
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
    return True


def run_logged(command: list[str], environment: dict[str, str], log, track=None) -> tuple[int, list[str]]:
    """Run ``command``; every line it writes (stdout and stderr, in order) goes to ``log``.
    Returns its exit status and its last TAIL_LINES lines. ``track`` is told the process while
    it runs (so a kill can reach it), then None."""
    tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
    process = subprocess.Popen(
        command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    )
    if track is not None:
        track(process)
    try:
        for line in process.stdout:
            line = line.rstrip("\n")
            tail.append(line)
            log.info("%s", line)
        return process.wait(), list(tail)
    finally:
        process.stdout.close()
        if track is not None:
            track(None)


def _report_lines(summary: QualitySummary) -> list[str]:
    """Where the reports are, as links (the job's own lines above already list each partition)."""
    paths = summary.paths
    links = (
        ("Quality summary (HTML)", paths.summary_html),
        ("Quality summary (JSON)", paths.summary_json),
        ("Data Docs", paths.data_docs_index),
    )
    return [f"{label}: file://{path}" for label, path in links if path]
