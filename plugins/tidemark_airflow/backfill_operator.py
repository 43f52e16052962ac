"""Run the backfill job (spark_jobs/replay/backfill.py) for one validated backfill request."""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

from tidemark_airflow.live_yield import MAX_YIELDS, YIELD_DELAY, reschedule_after_yield
from tidemark_airflow.spark_job_operator import TidemarkSparkJobOperator


class BackfillOperator(TidemarkSparkJobOperator):
    """Backfills ``request`` (a BackfillRequest's JSON, ``compare`` included; templated, normally
    the validate task's output): the job receives it as one ``--request`` argument, encoded by the
    same Struct. ``run_name`` names the job's checkpoint, so a retry of the task resumes where the
    killed attempt stopped. Returns the job's BackfillResult as its JSON: ranges, counts, rate
    and, with ``compare``, the comparison with live.

    A request the job refuses (a range beyond retention, a partition the topic lacks) fails the
    task at once with the job's reason, without retries; a range partly past retention fails it
    after the rest was backfilled, naming the lost offsets and event times. A run into events that
    yielded to the live job's batch in flight (it claimed its offsets and wrote nothing else,
    tidemark.live_batch_wait) is rescheduled every ``yield_delay``, at most ``max_yields`` times
    (tidemark_airflow.live_yield): no retry is spent on it.
    """

    template_fields = (*TidemarkSparkJobOperator.template_fields, "request", "run_name")

    def __init__(
        self,
        *,
        stream: str,
        conf_path: str,
        request: Any,
        run_name: str,
        yield_delay: timedelta = YIELD_DELAY,
        max_yields: int = MAX_YIELDS,
        **kwargs: Any,
    ) -> None:
        super().__init__(stream=stream, conf_path=conf_path, job="spark_jobs/replay/backfill.py", **kwargs)
        self.request = request
        self.run_name = run_name
        self.yield_delay = yield_delay
        self.max_yields = max_yields

    def execute(self, context: Any) -> Any:
        from airflow.sdk.exceptions import AirflowFailException

        from tidemark.backfill_request import BackfillRequest
        from tidemark.backfill_result import BackfillRefusal, BackfillResult, BackfillYielded, decode_backfill_outcome

        stream = self.load_stream()
        request = BackfillRequest.from_json(self.request)
        with tempfile.TemporaryDirectory(prefix=f"tidemark-backfill-{stream.name}-") as folder:
            result_path = Path(folder) / "result.json"
            arguments = [
                "--conf",
                self.conf_path,
                "--request",
                request.encode(),
                "--run-name",
                self.run_name,
                "--result",
                str(result_path),
            ]
            try:
                self.submit(context, arguments)
            except Exception:
                outcome = decode_backfill_outcome(result_path.read_bytes()) if result_path.exists() else None
                if isinstance(outcome, BackfillRefusal):
                    raise AirflowFailException(f"Backfill refused before any work: {outcome.error}") from None
                if isinstance(outcome, BackfillYielded):
                    reschedule_after_yield(
                        context, outcome.yielded, "backfill", self.yield_delay, self.max_yields, self.log
                    )
                if outcome is not None and outcome.lost:
                    lost = [(part.partition, list(part.offsets), list(part.event_time)) for part in outcome.lost]
                    raise AirflowFailException(
                        f"Part of the range left the log (retention) and is LOST (partition, offsets, event time): {lost}. "
                        f"The rest was backfilled ({outcome.records} records) into {outcome.target}; this backfill is NOT complete."
                    ) from None
                raise
            result = decode_backfill_outcome(result_path.read_bytes())
        if not isinstance(result, BackfillResult):  # a refusal exits 2, a yield 75: after exit 0, the job is broken
            raise AirflowFailException(f"The backfill job exited 0 without a result: {result}")
        self.log.info(
            "Backfilled %s [%s, %s) of stream %s into %s: %d records (%d late, %d quarantined) in %s s, %s records/s",
            result.ranges,
            result.start,
            result.end,
            stream.name,
            result.target,
            result.records,
            result.late,
            result.quarantined,
            result.seconds,
            result.records_per_second,
        )
        return result.to_json()
