"""Run the recovery job (spark_jobs/recover.py) for one validated recovery request."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from tidemark_airflow.spark_job_operator import TidemarkSparkJobOperator


class RecoverOperator(TidemarkSparkJobOperator):
    """Replays ``request`` (a RecoveryRequest's JSON; templated, normally the validate task's
    output) insert-only. Returns the job's result: the ranges recovered, the records inserted and
    the event hours they belong to. Offsets already past retention fail the task loudly, naming
    them, after every recoverable range was recovered; they are never skipped silently.
    """

    template_fields = (*TidemarkSparkJobOperator.template_fields, "request")

    def __init__(self, *, stream: str, conf_path: str, request: Any, **kwargs: Any) -> None:
        super().__init__(stream=stream, conf_path=conf_path, job="spark_jobs/recover.py", **kwargs)
        self.request = request

    def execute(self, context: Any) -> Any:
        from airflow.sdk.exceptions import AirflowFailException

        stream = self.load_stream()
        request = self.request
        ranges = ",".join(f"{r['start']}-{r['end']}" for r in request["ranges"])
        with tempfile.TemporaryDirectory(prefix=f"tidemark-recover-{stream.name}-") as folder:
            result_path = Path(folder) / "result.json"
            arguments = ["--stream", stream.name, "--conf", self.conf_path, "--partition", str(request["partition"]),
                         "--ranges", ranges, "--reason", request["reason"], "--result", str(result_path)]  # fmt: skip
            try:
                self.submit(context, arguments)
            except Exception:
                result = json.loads(result_path.read_text()) if result_path.exists() else None
                if result and result["lost"]:
                    # The typed result, for the alarm (tidemark_airflow.alert_occasions.RecoveryLost).
                    context["ti"].xcom_push(key="recovery_result", value=result)
                    raise AirflowFailException(
                        f"Offsets of partition {request['partition']} of stream {stream.name} left the log (retention) "
                        f"before they were persisted and are LOST: {result['lost']}. Every recoverable range was recovered "
                        f"({result['inserted']} records inserted)."
                    ) from None
                raise
            result = json.loads(result_path.read_text())
        self.log.info(
            "Partition %s of stream %s: recovered %s, %d records inserted, event hours %s",
            request["partition"], stream.name, [[r["start"], r["end"]] for r in result["recovered"]],
            result["inserted"], result["event_hours"],
        )  # fmt: skip
        return result
