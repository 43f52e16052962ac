"""Submit the persist job of one stream through the Spark provider's connection."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

# The job file ships with the project; spark-submit needs a path, not a module name.
PERSIST_APPLICATION = Path(__file__).resolve().parents[2] / "spark_jobs" / "persist.py"

# Variables the job needs from the environment the task runs in (all of them non-secret).
_FORWARDED_ENVIRONMENT = (
    "TIDEMARK_HOME",
    "TIDEMARK_CONF",
    "TIDEMARK_KAFKA_BOOTSTRAP",
    "TIDEMARK_LAKE_ROOT",
    "TIDEMARK_CHECKPOINT_ROOT",
    "TIDEMARK_JARS",
    "PYSPARK_PYTHON",
    "SPARK_LOCAL_IP",
    "TIDEMARK_SPARK_LOG_LEVEL",  # WARN by default; INFO brings Spark's chatter back for debugging
)


class PersistStreamOperator(SparkSubmitOperator):
    """Runs ``spark_jobs/persist.py --stream <stream>`` with spark-submit.

    The stream's configuration is validated when the task starts, before anything is submitted:
    a bad value fails the task at once, without retries, naming the key. The Spark master comes
    from the connection ``conn_id`` (``{"conn_type": "spark", "host": "local[*]"}`` embedded).

    Sealed hours: the task must declare ``outlets=[sealed_hours_alias(stream)]``. The job writes
    its run summary to a temporary file (``--run-summary``); once the job has succeeded, the task
    adds one event of ``sealed_hours_asset(stream)`` per hour the run newly sealed, none if it
    sealed none, and returns their extras. A missing or untrustworthy summary fails the task
    without retries: a rerun would not list the hours this run sealed.
    """

    template_fields = (*SparkSubmitOperator.template_fields, "stream", "mode")

    def __init__(
        self,
        *,
        stream: str,
        conf_path: str,
        mode: str | None = None,
        max_records_per_batch: int | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("name", f"tidemark-persist-{stream}")
        super().__init__(application=str(PERSIST_APPLICATION), **kwargs)
        self.stream = stream
        self.conf_path = conf_path
        self.mode = mode
        self.max_records_per_batch = max_records_per_batch

    def execute(self, context: Any) -> Any:
        from airflow.exceptions import AirflowFailException

        from stack.jars import delta_classpath
        from tidemark.stream_config import StreamConfigError, load_stream
        from tidemark_airflow.run_summary import RunSummaryError, format_watermark, read_run_summary
        from tidemark_airflow.sealed_hour_assets import emit_sealed_hour_events, sealed_hours_alias

        try:
            stream = load_stream(self.conf_path, self.stream)
            classpath = delta_classpath()
        except (StreamConfigError, RuntimeError) as error:
            raise AirflowFailException(str(error)) from None
        # Without the alias among the outlets Airflow drops the events silently; say so before
        # the job runs, not after.
        emitter = sealed_hours_alias(stream.name)
        if emitter not in self.outlets:
            raise AirflowFailException(
                f"Task {self.task_id!r} persists stream {stream.name!r} but does not declare its sealed-hour "
                f"events: add outlets=[sealed_hours_alias({stream.name!r})] "
                "(from tidemark_airflow.sealed_hour_assets) to the operator."
            )

        with tempfile.TemporaryDirectory(prefix=f"tidemark-persist-{stream.name}-") as folder:
            summary_path = Path(folder) / "run-summary.json"
            self.application_args = ["--stream", stream.name, "--conf", self.conf_path, "--run-summary", str(summary_path)]
            if self.mode:
                self.application_args += ["--mode", self.mode]
            if self.max_records_per_batch:
                self.application_args += ["--max-records-per-batch", str(self.max_records_per_batch)]
            # Delta must be on the driver's classpath when spark-submit starts the JVM; the job's
            # session adds the rest of its settings itself.
            self.conf = {
                "spark.driver.extraClassPath": classpath,
                "spark.executor.extraClassPath": classpath,
                **(self.conf or {}),
            }
            self.env_vars = {
                **{name: os.environ[name] for name in _FORWARDED_ENVIRONMENT if name in os.environ},
                **(self.env_vars or {}),
            }
            self.submit_job(context)
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
            summary.global_watermark and format_watermark(summary.global_watermark),
        )
        return extras

    def submit_job(self, context: Any) -> None:
        """Run spark-submit with the arguments ``execute`` prepared; returns once the job succeeded."""
        super().execute(context)
