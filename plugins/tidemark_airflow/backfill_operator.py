"""Run the backfill job (spark_jobs/backfill.py) for one validated backfill request."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from tidemark_airflow.spark_job_operator import TidemarkSparkJobOperator


class BackfillOperator(TidemarkSparkJobOperator):
    """Backfills ``request`` (a BackfillRequest's JSON plus ``compare``; templated, normally the
    validate task's output). ``run_name`` names the job's checkpoint, so a retry of the task
    resumes where the killed attempt stopped. Returns the job's result: ranges, counts, rate and,
    with ``compare``, the comparison with live.

    A request the job refuses (a range beyond retention, a partition the topic lacks) fails the
    task at once with the job's reason, without retries; a range partly past retention fails it
    after the rest was backfilled, naming the lost offsets and event times.
    """

    template_fields = (*TidemarkSparkJobOperator.template_fields, "request", "run_name")

    def __init__(self, *, stream: str, conf_path: str, request: Any, run_name: str, **kwargs: Any) -> None:
        super().__init__(stream=stream, conf_path=conf_path, job="spark_jobs/backfill.py", **kwargs)
        self.request = request
        self.run_name = run_name

    def execute(self, context: Any) -> Any:
        from airflow.sdk.exceptions import AirflowFailException

        stream = self.load_stream()
        request = self.request
        with tempfile.TemporaryDirectory(prefix=f"tidemark-backfill-{stream.name}-") as folder:
            result_path = Path(folder) / "result.json"
            arguments = ["--stream", stream.name, "--conf", self.conf_path, "--start", request["start"], "--end", request["end"],
                         "--partitions", ",".join(str(p) for p in request["partitions"]), "--run-name", self.run_name,
                         "--result", str(result_path)]  # fmt: skip
            if request.get("shadow"):
                arguments += ["--target", "shadow", "--shadow-name", request["shadow"]]
                if request.get("compare"):
                    arguments.append("--compare")
            try:
                self.submit(context, arguments)
            except Exception:
                result = json.loads(result_path.read_text()) if result_path.exists() else None
                if result and result.get("error"):
                    raise AirflowFailException(f"Backfill refused before any work: {result['error']}") from None
                if result and result.get("lost"):
                    raise AirflowFailException(
                        f"Part of the range left the log (retention) and is LOST: {result['lost']}. The rest was backfilled "
                        f"({result['records']} records) into {result['target']}; this backfill is NOT complete."
                    ) from None
                raise
            result = json.loads(result_path.read_text())
        self.log.info(
            "Backfilled %s [%s, %s) of stream %s into %s: %d records (%d late, %d quarantined) in %s s, %s records/s",
            result["ranges"], result["start"], result["end"], stream.name, result["target"], result["records"],
            result["late"], result["quarantined"], result["seconds"], result["records_per_second"],
        )  # fmt: skip
        return result
