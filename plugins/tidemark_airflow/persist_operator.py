"""Submit the persist job of one stream through the Spark provider's connection."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from tidemark_airflow.spark_job_operator import TidemarkSparkJobOperator


class PersistStreamOperator(TidemarkSparkJobOperator):
    """Runs ``spark_jobs/persist/job.py --stream <stream>`` with spark-submit.

    Sealed hours: the task must declare ``outlets=[sealed_hours_alias(stream)]``. The job writes
    its run summary to a temporary file (``--run-summary``); once the job has succeeded, the task
    adds one event of ``sealed_hours_asset(stream)`` per hour the run newly sealed, none if it
    sealed none, and returns their extras. A missing or untrustworthy summary fails the task
    without retries: a rerun would not list the hours this run sealed.

    Nothing new, no Spark: with ``skip_when_nothing_new`` (the default), a bounded run
    (available_now) first looks at the log's bounds against the lake's ledger without Spark
    (connectors.persist_look, about a second). When no partition's log end moved past its
    ledger position and no partition's status would change, the job would plan no batch: the
    task says so in one log line and ends, sealing nothing and returning no events, as the job
    would. A ledger or a log that cannot be read, a chaos switch or a test's crash point runs
    the job (the line says why). Continuous runs always run the job.
    """

    template_fields = (*TidemarkSparkJobOperator.template_fields, "mode")

    def __init__(
        self,
        *,
        stream: str,
        conf_path: str,
        mode: str | None = None,
        max_records_per_batch: int | None = None,
        skip_when_nothing_new: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(stream=stream, conf_path=conf_path, job="spark_jobs/persist/job.py", **kwargs)
        self.mode = mode
        self.max_records_per_batch = max_records_per_batch
        self.skip_when_nothing_new = skip_when_nothing_new

    def execute(self, context: Any) -> Any:
        from airflow.sdk.exceptions import AirflowFailException

        from tidemark_airflow.run_summary import RunSummaryError, read_run_summary
        from tidemark_airflow.sealed_hour_assets import emit_sealed_hour_events, sealed_hours_alias

        stream = self.load_stream()
        # Without the alias among the outlets Airflow drops the events silently; say so before
        # the job runs, not after.
        emitter = sealed_hours_alias(stream.name)
        if emitter not in self.outlets:
            raise AirflowFailException(
                f"Task {self.task_id!r} persists stream {stream.name!r} but does not declare its sealed-hour "
                f"events: add outlets=[sealed_hours_alias({stream.name!r})] "
                "(from tidemark_airflow.sealed_hour_assets) to the operator."
            )

        if self._nothing_new(stream):
            return []

        with tempfile.TemporaryDirectory(prefix=f"tidemark-persist-{stream.name}-") as folder:
            summary_path = Path(folder) / "run-summary.json"
            arguments = ["--stream", stream.name, "--conf", self.conf_path, "--run-summary", str(summary_path)]
            if self.mode:
                arguments += ["--mode", self.mode]
            if self.max_records_per_batch:
                arguments += ["--max-records-per-batch", str(self.max_records_per_batch)]
            self.submit(context, arguments)
            try:
                summary = read_run_summary(
                    summary_path, stream=stream.name, allowed_lateness_ms=stream.event_time.allowed_lateness_ms
                )
            except RunSummaryError as error:
                raise AirflowFailException(str(error)) from None

        extras = emit_sealed_hour_events(context["outlet_events"], summary)
        self.log.info(
            "Stream %s: %d newly sealed hours %s, global watermark %s",
            stream.name,
            len(extras),
            [extra["hour"] for extra in extras],
            summary.global_watermark or "none yet",
        )
        return extras

    def _nothing_new(self, stream) -> bool:
        """True when the Spark-free look finds nothing for the job to do (it logs one line either
        way): see the class docstring."""
        import os
        import time

        from connectors.persist_look import look_before_persist
        from tidemark.chaos_freeze import chaos_freeze_setting

        if not self.skip_when_nothing_new or (self.mode or stream.persist.mode) != "available_now":
            return False
        started = time.monotonic()
        switches = [name for name in _RUN_SWITCHES if os.environ.get(name, "").strip()]
        if chaos_freeze_setting(os.environ):  # the embedded stack's switch file (tidemark.chaos_freeze)
            switches.append("TIDEMARK_CHAOS_FREEZE_FILE")
        if switches:
            self.log.info("Stream %s: %s is set: running the job without looking first", stream.name, switches[0])
            return False
        try:
            self.apply_connections()  # the lake's and the stream's keys, as the job gets them
        except Exception as error:  # submit() fails the task naming the connection
            self.log.info("Stream %s: running the job: a connection could not be read (%s)", stream.name, error)
            return False
        look = look_before_persist(stream)
        seconds = time.monotonic() - started
        if look.nothing_new:
            self.log.info(
                "Stream %s: nothing new, no Spark job started: %s (looked in %.1f s)", stream.name, look.reason, seconds
            )
        else:
            self.log.info("Stream %s: running the job: %s (looked in %.1f s)", stream.name, look.reason, seconds)
        return look.nothing_new


# Switches that make a run do something a look at the log cannot see: the chaos switches and a
# test's crash point (spark_jobs/persist/job.py).
_RUN_SWITCHES = ("TIDEMARK_CHAOS_FREEZE", "TIDEMARK_CHAOS_THROTTLE", "TIDEMARK_CRASH_AT")
