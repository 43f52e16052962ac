"""Run the quarantine re-drive job (spark_jobs/replay/redrive.py) for one validated request."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from tidemark_airflow.spark_job_operator import TidemarkSparkJobOperator


class RedriveOperator(TidemarkSparkJobOperator):
    """Re-drives ``request`` (a RedriveRequest's JSON; templated, normally the validate task's
    output): the job receives it as one ``--request`` argument, encoded by the same Struct, and
    writes a RedriveResult, which this returns as its JSON: the records moved to events and to
    late (from the job's own MERGE commits), those that still do not decode, and the event hours
    moved records belong to, which the DAG checks again."""

    template_fields = (*TidemarkSparkJobOperator.template_fields, "request")

    def __init__(self, *, stream: str, conf_path: str, request: Any, **kwargs: Any) -> None:
        super().__init__(stream=stream, conf_path=conf_path, job="spark_jobs/replay/redrive.py", **kwargs)
        self.request = request

    def execute(self, context: Any) -> Any:
        from tidemark.redrive_request import RedriveRequest
        from tidemark.redrive_result import RedriveResult

        stream = self.load_stream()
        request = RedriveRequest.from_json(self.request)
        with tempfile.TemporaryDirectory(prefix=f"tidemark-redrive-{stream.name}-") as folder:
            result_path = Path(folder) / "result.json"
            self.submit(
                context, ["--conf", self.conf_path, "--request", request.encode(), "--result", str(result_path)]
            )
            result = RedriveResult.decode(result_path.read_bytes())
        self.log.info(
            "Stream %s, reason %s: %d candidates, %d moved to events, %d to late, %d already moved; still refused: %s",
            stream.name,
            request.reason,
            result.candidates,
            result.moved_to_events,
            result.moved_to_late,
            result.already_moved,
            ", ".join(f"{count} {reason}" for reason, count in result.still_refused.items()) or "none",
        )
        return result.to_json()
