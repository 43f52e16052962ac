"""Submit one driver of a family's persist tick: several members persisted one after another in one
Spark application (spark_jobs/persist/family_job.py)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from tidemark_airflow.spark_job_operator import TidemarkSparkJobOperator


class FamilyPersistOperator(TidemarkSparkJobOperator):
    """Runs the persist job of each member in ``streams`` in one spark-submit (the family's
    members share their keys, so the first member's sizes the driver and names the connections).

    Each member that succeeded has its run summary read and checked as a single stream's is, and
    one event of its sealed-hours asset per hour it newly sealed (the task must declare every
    member's alias among its outlets). Returns the FamilyPersistResult of the members that
    failed (none: all succeeded) as JSON: the task succeeds whenever the driver ran, so that the
    others' events are recorded, and the family's verdict task fails for those members. A driver
    that did not run (spark-submit failed) fails the task."""

    template_fields = (*TidemarkSparkJobOperator.template_fields, "streams")

    def __init__(self, *, streams: list[str], conf_path: str, **kwargs: Any) -> None:
        if not streams:
            raise ValueError("a family's persist driver needs at least one member")
        super().__init__(stream=streams[0], conf_path=conf_path, job="spark_jobs/persist/family_job.py", **kwargs)
        self.streams = list(streams)

    def execute(self, context: Any) -> Any:
        from airflow.sdk.exceptions import AirflowFailException

        from tidemark.family_persist_result import FamilyPersistResult
        from tidemark.stream_config import load_streams
        from tidemark_airflow.run_summary import RunSummaryError, read_run_summary
        from tidemark_airflow.sealed_hour_assets import emit_sealed_hour_events, sealed_hours_alias

        self.load_stream()
        missing = [name for name in self.streams if sealed_hours_alias(name) not in self.outlets]
        if missing:
            raise AirflowFailException(
                f"Task {self.task_id!r} persists {missing} without their sealed-hours aliases among its outlets"
            )
        streams = load_streams(self.conf_path)
        with tempfile.TemporaryDirectory(prefix="tidemark-persist-family-") as folder:
            arguments = ["--conf", self.conf_path, "--result-dir", folder]
            for name in self.streams:
                arguments += ["--stream", name]
            self.submit(context, arguments)
            result = FamilyPersistResult.decode((Path(folder) / "result.json").read_bytes())
            failed = list(result.failed())
            for outcome in result.members:
                if outcome.exit_code != 0:
                    self.log.error(
                        "Stream %s: failed (exit %d) in %.1f s: %s",
                        outcome.stream,
                        outcome.exit_code,
                        outcome.seconds,
                        outcome.error,
                    )
                    continue
                try:
                    summary = read_run_summary(
                        Path(folder) / outcome.summary_file,
                        stream=outcome.stream,
                        allowed_lateness_ms=streams[outcome.stream].event_time.allowed_lateness_ms,
                    )
                except RunSummaryError as error:
                    failed.append(outcome.__class__(outcome.stream, 1, outcome.seconds, error=str(error)))
                    continue
                added = emit_sealed_hour_events(context["outlet_events"], summary)
                self.log.info(
                    "Stream %s: %d batches in %.1f s, %d newly sealed hours %s, global watermark %s",
                    outcome.stream,
                    summary.batches,
                    outcome.seconds,
                    len(added),
                    [extra["hour"] for extra in added],
                    summary.global_watermark or "none yet",
                )
        self.log.info("%d members in one driver in %.1f s, %d failed", len(result.members), result.seconds, len(failed))
        # The task succeeds when the driver ran: the members that succeeded keep their sealed-hour
        # events (Airflow drops a failed task's). The family's verdict task fails for the members
        # that did not, and alarms for each.
        return FamilyPersistResult(tuple(failed), result.seconds).to_json()
