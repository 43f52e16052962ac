"""What every tidemark task that runs a Spark job shares: spark-submit through the Spark
provider's connection, with what its master needs (Delta, and on a cluster tidemark's code, see
``tidemark_airflow.spark_master``) and tidemark's environment forwarded."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

# The project's root: spark-submit needs the jobs as file paths, not module names.
PROJECT = Path(__file__).resolve().parents[2]

# Variables the jobs need from the environment the task runs in (all of them non-secret).
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
    "TIDEMARK_CHAOS_FREEZE",  # the chaos switch (off unless set): see spark_jobs/persist.py
    # Where the lake's S3 is (connectors/lake_storage.py). The credentials are secret: they reach
    # spark-submit through this process's environment (tidemark_airflow.aws_connection), never here.
    "TIDEMARK_S3_ENDPOINT",
    "AWS_REGION",
)


class TidemarkSparkJobOperator(SparkSubmitOperator):
    """Runs one of tidemark's Spark jobs for ``stream``; subclasses set the job and its arguments.

    The stream's configuration is validated when the task starts, before anything is submitted:
    a bad value fails the task at once, without retries, naming the key. The Spark master comes
    from the connection ``conn_id`` (``{"conn_type": "spark", "host": "local[*]"}`` embedded).
    """

    template_fields = (*SparkSubmitOperator.template_fields, "stream")

    def __init__(self, *, stream: str, conf_path: str, job: str, **kwargs: Any) -> None:
        kwargs.setdefault("name", f"tidemark-{Path(job).stem}-{stream}")
        super().__init__(application=str(PROJECT / job), **kwargs)
        self.stream = stream
        self.conf_path = conf_path

    def load_stream(self):
        """The stream's validated configuration; a bad one fails the task without retries."""
        from airflow.sdk.exceptions import AirflowFailException

        from connectors.jars import delta_classpath
        from tidemark.stream_config import StreamConfigError, load_stream

        from tidemark.batch_memory import machine_memory_mib, persist_driver_memory_mib

        try:
            stream = load_stream(self.conf_path, self.stream)
            self._classpath = delta_classpath()
            # The driver's heap is sized to the stream's row budget; one that cannot fit fails here.
            self._driver_memory = f"{persist_driver_memory_mib(stream, machine_memory_mib())}m"
        except (StreamConfigError, RuntimeError, ValueError) as error:
            raise AirflowFailException(str(error)) from None
        return stream

    def submit(self, context: Any, arguments: list[str]) -> None:
        """spark-submit the job with ``arguments``; returns once it succeeded, raises otherwise.

        What the submit adds follows from the connection's master (``tidemark_airflow.spark_master``):
        on ``local[...]`` Delta on the classpath; on a cluster also the Delta jars and tidemark's
        code shipped to the executors, and on a standalone master the driver's address, after the
        master has been reached: one that cannot be fails the task within seconds, naming the
        master and what to check (retried as the task's retries say). Settings in the operator's
        ``conf`` win over the derived ones.
        """
        from airflow.sdk.exceptions import AirflowException, AirflowFailException

        from connectors.jars import group_jars, jars_root
        from tidemark_airflow.spark_master import SparkConnectionError, SparkMasterUnreachable, spark_master

        connection = self._get_hook()._connection  # the master as the Spark provider resolves it
        users = (self.conf, self.py_files, self.jars)
        with tempfile.TemporaryDirectory(prefix="tidemark-submit-") as workspace:
            try:
                master = spark_master(connection["master"], connection["deploy_mode"], self._conn_id)
                placement = master.submit_settings(
                    self._classpath, group_jars(jars_root(), "delta"), PROJECT, Path(workspace)
                )
            except SparkMasterUnreachable as error:
                raise AirflowException(str(error)) from None
            except (SparkConnectionError, FileNotFoundError) as error:
                raise AirflowFailException(str(error)) from None
            self.log.info("Spark master %s: %s", connection["master"], type(master).__name__)
            from tidemark_airflow.aws_connection import apply_aws_connection

            aws_conn_id = apply_aws_connection()
            if aws_conn_id:
                self.log.info("Lake storage settings from the Airflow connection %r", aws_conn_id)
            self.application_args = arguments
            self.conf = {
                **placement.conf,
                "spark.driver.memory": os.environ.get("TIDEMARK_DRIVER_MEMORY", self._driver_memory),
                **(self.conf or {}),
            }
            self.py_files = ",".join(filter(None, [*placement.py_files, self.py_files]))
            self.jars = ",".join(filter(None, [*placement.jars, self.jars]))
            self.env_vars = {
                **{name: os.environ[name] for name in _FORWARDED_ENVIRONMENT if name in os.environ},
                **(self.env_vars or {}),
            }
            try:
                self.submit_job(context)
            finally:
                # The shipped zip lives as long as this submit; a second submit derives afresh.
                self.conf, self.py_files, self.jars = users
                self._hook = None

    def submit_job(self, context: Any) -> None:
        """Run spark-submit with the prepared arguments (tests replace this with a fake job)."""
        super().execute(context)


def reports_root() -> Path:
    """Where quality reports and Data Docs live: ``$TIDEMARK_HOME/reports`` (embedded: .tidemark)."""
    return Path(os.environ.get("TIDEMARK_HOME", str(PROJECT / ".tidemark"))) / "reports"
