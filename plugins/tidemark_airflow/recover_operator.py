"""Run the recovery job (spark_jobs/replay/recover.py) for one validated recovery request."""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

from tidemark_airflow.live_yield import MAX_YIELDS, YIELD_DELAY, reschedule_after_yield
from tidemark_airflow.spark_job_operator import TidemarkSparkJobOperator


class RecoverOperator(TidemarkSparkJobOperator):
    """Replays ``request`` (a RecoveryRequest's JSON; templated, normally the validate task's
    output) insert-only: the job receives it as one ``--request`` argument, encoded by the same
    Struct, and writes a RecoveryResult, which this returns as its JSON: the ranges recovered,
    the records inserted and the event hours they belong to. Offsets already past retention fail
    the task loudly, naming them, after every recoverable range was recovered; they are never
    skipped silently.

    A run that yielded to the live job's batch in flight (it claimed its offsets and wrote
    nothing else, tidemark.live_batch_wait) is rescheduled every ``yield_delay``, at most
    ``max_yields`` times (tidemark_airflow.live_yield): no retry is spent on it.
    """

    template_fields = (*TidemarkSparkJobOperator.template_fields, "request")

    def __init__(
        self,
        *,
        stream: str,
        conf_path: str,
        request: Any,
        yield_delay: timedelta = YIELD_DELAY,
        max_yields: int = MAX_YIELDS,
        **kwargs: Any,
    ) -> None:
        super().__init__(stream=stream, conf_path=conf_path, job="spark_jobs/replay/recover.py", **kwargs)
        self.request = request
        self.yield_delay = yield_delay
        self.max_yields = max_yields

    def execute(self, context: Any) -> Any:
        from airflow.sdk.exceptions import AirflowFailException

        from tidemark.recovery_request import RecoveryRequest
        from tidemark.recovery_result import RecoveryResult, RecoveryYielded, decode_recovery_outcome

        stream = self.load_stream()
        request = RecoveryRequest.from_json(self.request)
        with tempfile.TemporaryDirectory(prefix=f"tidemark-recover-{stream.name}-") as folder:
            result_path = Path(folder) / "result.json"
            arguments = ["--conf", self.conf_path, "--request", request.encode(), "--result", str(result_path)]
            try:
                self.submit(context, arguments)
            except Exception:
                result = decode_recovery_outcome(result_path.read_bytes()) if result_path.exists() else None
                if isinstance(result, RecoveryYielded):
                    reschedule_after_yield(
                        context, result.yielded, "recovery", self.yield_delay, self.max_yields, self.log
                    )
                if isinstance(result, RecoveryResult) and result.lost:
                    # The typed result, for the alarm (tidemark_airflow.alert_occasions.RecoveryLost).
                    context["ti"].xcom_push(key="recovery_result", value=result.to_json())
                    raise AirflowFailException(
                        f"Offsets of partition {request.partition} of stream {stream.name} left the log (retention) "
                        f"before they were persisted and are LOST: {[list(span) for span in result.lost]}. Every "
                        f"recoverable range was recovered ({result.inserted} records inserted)."
                    ) from None
                raise
            result = RecoveryResult.decode(result_path.read_bytes())
        self.log.info(
            "Partition %s of stream %s: recovered %s, %d records inserted, event hours %s; restart the live job: %s",
            request.partition,
            stream.name,
            [[r.start, r.end] for r in result.recovered],
            result.inserted,
            list(result.event_hours),
            request.restart_live,
        )
        return result.to_json()
