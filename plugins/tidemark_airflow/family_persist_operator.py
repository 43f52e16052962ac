"""One driver of a family's persist tick (spark_jobs/persist/family_job.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tidemark_airflow.family_driver_operator import FamilyDriverOperator


class FamilyPersistOperator(FamilyDriverOperator):
    """Persists each member in ``streams`` in one driver. Each member that succeeded has its run
    summary read and checked as a single stream's is, and one event of its sealed-hours asset
    per hour it newly sealed (the task must declare every member's alias among its outlets)."""

    def __init__(self, *, streams: list[str], conf_path: str, **kwargs: Any) -> None:
        super().__init__(streams=streams, conf_path=conf_path, job="spark_jobs/persist/family_job.py", **kwargs)

    def _before(self, context: Any) -> None:
        from airflow.sdk.exceptions import AirflowFailException

        from tidemark_airflow.sealed_hour_assets import sealed_hours_alias

        missing = [name for name in self.streams if sealed_hours_alias(name) not in self.outlets]
        if missing:
            raise AirflowFailException(
                f"Task {self.task_id!r} persists {missing} without their sealed-hours aliases among its outlets"
            )

    def _succeeded(self, outcome, path: Path, stream, context: Any) -> str | None:
        from tidemark_airflow.run_summary import RunSummaryError, read_run_summary
        from tidemark_airflow.sealed_hour_assets import emit_sealed_hour_events

        try:
            summary = read_run_summary(
                path, stream=outcome.stream, allowed_lateness_ms=stream.event_time.allowed_lateness_ms
            )
        except RunSummaryError as error:
            return str(error)
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
        return None
