"""Run the erasure job (spark_jobs/erasure/job.py) for one validated request."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from tidemark_airflow.spark_job_operator import TidemarkSparkJobOperator


class EraseOperator(TidemarkSparkJobOperator):
    """Erases ``request`` (an ErasureRequest's JSON; templated, normally the validate task's
    output): the job receives it as one ``--request`` argument and writes an ErasureResult, which
    this returns as its JSON: the records erased, the rows each table's DELETE removed (its own
    commit's metrics), the event hours they belonged to (the DAG checks them again) and the
    partitions live had not read to the log's end."""

    template_fields = (*TidemarkSparkJobOperator.template_fields, "request")

    def __init__(self, *, stream: str, conf_path: str, request: Any, **kwargs: Any) -> None:
        super().__init__(stream=stream, conf_path=conf_path, job="spark_jobs/erasure/job.py", **kwargs)
        self.request = request

    def execute(self, context: Any) -> Any:
        from tidemark.erasure_request import ErasureRequest
        from tidemark.erasure_result import ErasureResult

        stream = self.load_stream()
        request = ErasureRequest.from_json(self.request)
        with tempfile.TemporaryDirectory(prefix=f"tidemark-erase-{stream.name}-") as folder:
            result_path = Path(folder) / "result.json"
            self.submit(
                context, ["--conf", self.conf_path, "--request", request.encode(), "--result", str(result_path)]
            )
            result = ErasureResult.decode(result_path.read_bytes())
        self.log.info("%s (erasure %s, asked by %s)", result.summary(), result.erasure_id, result.requested_by)
        if result.not_yet_persisted:
            self.log.warning(
                "Records the live job had not read when the erasure ran are not erased (partition: live's position, "
                "the log's end): %s. Run the erasure again once live has caught up.",
                result.not_yet_persisted,
            )
        return result.to_json()
