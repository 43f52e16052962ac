"""Run the accept-lost job (spark_jobs/replay/accept_lost.py) for one validated request."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from tidemark_airflow.spark_job_operator import TidemarkSparkJobOperator


class AcceptLostOperator(TidemarkSparkJobOperator):
    """Accepts ``request`` (an AcceptLostRequest's JSON; templated, normally the validate task's
    output) as lost: the job receives it as one ``--request`` argument, checks it against the
    ledger and the log again, writes its ledger row, and writes an AcceptLostResult, which this
    returns as its JSON."""

    template_fields = (*TidemarkSparkJobOperator.template_fields, "request")

    def __init__(self, *, stream: str, conf_path: str, request: Any, **kwargs: Any) -> None:
        super().__init__(stream=stream, conf_path=conf_path, job="spark_jobs/replay/accept_lost.py", **kwargs)
        self.request = request

    def execute(self, context: Any) -> Any:
        from tidemark.accepted_loss import AcceptLostRequest, AcceptLostResult

        stream = self.load_stream()
        request = AcceptLostRequest.from_json(self.request)
        with tempfile.TemporaryDirectory(prefix=f"tidemark-accept-lost-{stream.name}-") as folder:
            result_path = Path(folder) / "result.json"
            self.submit(
                context, ["--conf", self.conf_path, "--request", request.encode(), "--result", str(result_path)]
            )
            result = AcceptLostResult.decode(result_path.read_bytes())
        self.log.info(
            "Stream %s, partition %d: positions [%d, %d) %s as lost by %s at %s",
            stream.name,
            result.partition,
            result.start,
            result.end,
            "accepted" if result.written else "were already accepted",
            result.accepted_by,
            result.accepted_at,
        )
        return result.to_json()
