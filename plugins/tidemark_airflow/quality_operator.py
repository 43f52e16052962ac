"""Run a stream's quality checks (expectations/quality_run.py) through spark-submit."""

from __future__ import annotations

import re
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
            self.submit(context, arguments)
            summary = read_quality_summary(result_path)
        for line in _report_lines(summary):
            self.log.info("%s", line)
        return quality_summary_builtins(summary)


def _report_lines(summary: QualitySummary) -> list[str]:
    """Where the reports are, as links (the job's own lines above already list each partition)."""
    paths = summary.paths
    links = (
        ("Quality summary (HTML)", paths.summary_html),
        ("Quality summary (JSON)", paths.summary_json),
        ("Data Docs", paths.data_docs_index),
    )
    return [f"{label}: file://{path}" for label, path in links if path]
