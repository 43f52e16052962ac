"""What every tidemark task that runs a Spark job shares: spark-submit through the Spark
provider's connection, with what its master needs (Delta, and on a cluster tidemark's code, see
``tidemark_airflow.spark_master``) and tidemark's environment forwarded."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
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
    "TIDEMARK_CHAOS_FREEZE",  # the chaos switch (off unless set): see spark_jobs/persist/job.py
    "TIDEMARK_CHAOS_FREEZE_FILE",  # the embedded stack's chaos switch file (tidemark.chaos_freeze)
    "TIDEMARK_CHAOS_THROTTLE",  # Kinesis throttling injected (off unless set): spark_jobs/persist/pipeline.py
    # Where a Kinesis stream is (the stream's endpoint, or its connection's). Its keys are secret:
    # like the lake's, they reach spark-submit through this process's environment, never here.
    "TIDEMARK_KINESIS_ENDPOINT",
    "TIDEMARK_KINESIS_CONNECTION_ENDPOINT",
    # Where the lake's S3 is (connectors/lake_storage.py). The credentials are secret: they reach
    # spark-submit through this process's environment (tidemark_airflow.aws_connection), never here.
    "TIDEMARK_S3_ENDPOINT",
    "AWS_REGION",
)


@dataclass(frozen=True)
class DerivedSubmit:
    """What tidemark adds to one spark-submit: spark properties (the master's placement and the
    driver's heap), files to ship, the job's environment and its arguments."""

    conf: dict[str, str]
    py_files: tuple[str, ...]
    jars: tuple[str, ...]
    env_vars: dict[str, str]
    application_args: list[str]


class TidemarkSparkJobOperator(SparkSubmitOperator):
    """Runs one of tidemark's Spark jobs for ``stream``; subclasses set the job and its arguments.

    The stream's configuration is validated when the task starts, before anything is submitted:
    a bad value fails the task at once, without retries, naming the key. The Spark master comes
    from the connection ``conn_id`` (``{"conn_type": "spark", "host": "local[*]"}`` embedded).

    The driver's heap is tidemark's to size: ``spark.driver.memory`` is ``TIDEMARK_DRIVER_MEMORY``
    when set, else the heap the stream's row budget needs (tidemark.batch_memory), unless the
    operator's own ``conf`` sets it. No ``--driver-memory`` is passed: spark-submit lets that flag
    override ``spark.driver.memory``, so a ``driver_memory`` argument is refused.

    The provider is extended where it expects: settings go through ``__init__``, and tidemark's
    derived ones reach the hook through ``_get_hook()``. One ``submit`` per task run: the provider
    keeps the hook it built (``on_kill`` stops that spark-submit).
    """

    template_fields = (*SparkSubmitOperator.template_fields, "stream")

    def __init__(
        self,
        *,
        stream: str,
        conf_path: str,
        job: str,
        conn_id: str = "spark_default",
        deploy_mode: str | None = None,
        driver_memory: str | None = None,
        **kwargs: Any,
    ) -> None:
        if driver_memory is not None:
            raise ValueError(
                f"driver_memory={driver_memory!r}: tidemark sizes the driver of its jobs itself (spark-submit's "
                "--driver-memory would override it); set the stream's persist.driver_memory, or "
                "TIDEMARK_DRIVER_MEMORY in the environment of Airflow's workers, or conf={'spark.driver.memory': ...}."
            )
        kwargs.setdefault("name", f"tidemark-{Path(job).stem}-{stream}")
        super().__init__(application=str(PROJECT / job), conn_id=conn_id, deploy_mode=deploy_mode, **kwargs)
        self.stream = stream
        self.conf_path = conf_path
        self.conn_id = conn_id
        self.deploy_mode = deploy_mode
        self._driver_conf: dict[str, str] | None = None  # load_stream() sizes the driver
        self._kinesis_conn_id: str | None = None  # load_stream() reads it from a Kinesis source
        self._kafka_conn_id: str | None = None  # and this from a Kafka source
        self._kafka_bootstrap = ""
        self._registry: tuple[str | None, str | None] = (None, None)  # an Avro stream's (conn_id, url)
        self._derived: DerivedSubmit | None = None  # set for the length of submit()
        self._submitted = False

    def load_stream(self):
        """The stream's validated configuration; a bad one fails the task without retries.

        Also sizes the driver (``spark.driver.memory``): a budget that cannot fit fails here too.
        """
        from airflow.sdk.exceptions import AirflowFailException

        from connectors.spark_session import batch_job_conf
        from tidemark.stream_config import StreamConfigError, load_stream

        try:
            stream = load_stream(self.conf_path, self.stream)
            self._driver_conf = batch_job_conf(stream)
            # A Kinesis stream's keys come from the connection its source names (read in submit),
            # a Kafka stream's security settings from its Kafka connection.
            self._kinesis_conn_id = stream.source.aws_conn_id
            self._kafka_conn_id = stream.source.kafka_conn_id
            self._kafka_bootstrap = stream.source.address
            self._registry = (stream.payload.registry_conn_id, stream.payload.registry_url)
        except (StreamConfigError, ValueError) as error:
            raise AirflowFailException(str(error)) from None
        return stream

    def submit(self, context: Any, arguments: list[str]) -> None:
        """spark-submit the job with ``arguments``; returns once it succeeded, raises otherwise.

        What the submit adds follows from the connection's master (``tidemark_airflow.spark_master``):
        on ``local[...]`` Delta on the classpath; on a cluster also the Delta jars and tidemark's
        code shipped to the executors, and on a standalone master the driver's address, after the
        master has been reached: one that cannot be fails the task within seconds, naming the
        master and what to check (retried as the task's retries say). A connection that does not
        exist, or that Spark cannot use, fails the task without retries. Settings in the operator's
        ``conf`` win over the derived ones. A spark-submit that exits non-zero raises the
        provider's ``AirflowException`` with its exit code and its last lines of output.
        """
        from airflow.sdk.exceptions import AirflowException, AirflowFailException

        from connectors.jars import JarsError, delta_classpath, group_jars, jars_root
        from tidemark_airflow.spark_master import SparkConnectionError, SparkMasterUnreachable, spark_master

        if self._driver_conf is None:
            raise RuntimeError("load_stream() sizes the driver: call it before submit()")
        if self._submitted:
            raise RuntimeError("one spark-submit per task run: the provider keeps the hook of the first")
        self._submitted = True
        connection = self.spark_connection()
        with tempfile.TemporaryDirectory(prefix="tidemark-submit-") as workspace:
            try:
                master = spark_master(connection.master, connection.deploy_mode, connection.conn_id)
                placement = master.submit_settings(
                    delta_classpath(), group_jars(jars_root(), "delta"), PROJECT, Path(workspace)
                )
            except SparkMasterUnreachable as error:
                raise AirflowException(str(error)) from None
            except (SparkConnectionError, FileNotFoundError, JarsError) as error:
                raise AirflowFailException(str(error)) from None
            self.log.info("Spark master %s: %s", connection.master, type(master).__name__)
            self.apply_connections()
            self._derived = DerivedSubmit(
                conf={**placement.conf, **self._driver_conf},
                py_files=placement.py_files,
                jars=placement.jars,
                env_vars={name: os.environ[name] for name in _FORWARDED_ENVIRONMENT if name in os.environ},
                application_args=list(arguments),
            )
            try:
                # The shipped zip lives as long as this spark-submit.
                self.run_spark_submit(context, self._derived.application_args)
            finally:
                self._derived = None

    def connections_applied_for_a_look(self, stream) -> bool:
        """Apply the lake's connection settings (``apply_connections``) before a look at the lake
        without Spark; False (logged: the job runs, and its own submit names the connection) when
        they cannot be read."""
        try:
            self.apply_connections()  # the lake's S3 settings, as the job gets them in submit()
        except Exception as error:  # the job's own submit names the connection and fails the task
            self.log.info("Stream %s: could not read the lake's connection (%s): running the job", stream.name, error)
            return False
        return True

    def apply_connections(self) -> None:
        """Put the lake's S3 settings (``TIDEMARK_AWS_CONN_ID``'s connection) and a Kinesis source's
        keys (its ``aws_conn_id``), a Kafka source's security settings (its ``kafka_conn_id``) and
        an Avro payload's registry login (its ``registry_conn_id``) into this process's
        environment, where the job, or a Spark-free reader in this task, finds them. A connection
        that does not exist fails the task without retries, naming it. Call ``load_stream()`` first."""
        from airflow.sdk.exceptions import AirflowFailException

        from tidemark_airflow.aws_connection import apply_aws_connection, apply_kinesis_connection

        aws_conn_id = apply_aws_connection()
        if aws_conn_id:
            self.log.info("Lake storage settings from the Airflow connection %r", aws_conn_id)
        try:
            kinesis_conn_id = apply_kinesis_connection(self._kinesis_conn_id)
        except Exception as error:  # Airflow's own error names the connection that does not exist
            raise AirflowFailException(f"source.aws_conn_id {self._kinesis_conn_id!r}: {error}") from None
        if kinesis_conn_id:
            self.log.info("Kinesis credentials from the Airflow connection %r", kinesis_conn_id)
        from tidemark_airflow.kafka_connection import apply_kafka_connection

        try:
            kafka_conn_id = apply_kafka_connection(self._kafka_conn_id, self._kafka_bootstrap)
        except Exception as error:  # Airflow's error names the missing connection; ours the key
            raise AirflowFailException(f"source.kafka_conn_id {self._kafka_conn_id!r}: {error}") from None
        if kafka_conn_id:
            self.log.info("Kafka security settings from the Airflow connection %r", kafka_conn_id)
        from tidemark_airflow.registry_connection import apply_registry_connection

        registry_conn_id, registry_url = self._registry
        try:
            applied = apply_registry_connection(registry_conn_id, registry_url or "")
        except Exception as error:  # Airflow's error names the missing connection; ours the variable
            raise AirflowFailException(f"payload.registry_conn_id {registry_conn_id!r}: {error}") from None
        if applied:
            self.log.info("Schema registry login from the Airflow connection %r", applied)

    def spark_connection(self):
        """The master and deploy mode of ``conn_id``, read through Airflow's Connection API as the
        provider reads them (tidemark_airflow.spark_connection). A connection that does not exist
        fails the task, naming it (the provider would fall back to YARN)."""
        from airflow.sdk import BaseHook
        from airflow.sdk.exceptions import AirflowFailException, AirflowNotFoundException

        from tidemark_airflow.spark_connection import SparkConnection

        try:
            connection = BaseHook.get_connection(self.conn_id)
        except AirflowNotFoundException:
            raise AirflowFailException(
                f"The Spark connection {self.conn_id!r} is not defined: add it in Airflow, or set "
                f'AIRFLOW_CONN_{self.conn_id.upper()}=\'{{"conn_type": "spark", "host": "local[*]"}}\' '
                "in the environment of Airflow's workers (the stream's persist.spark_conn_id names it)."
            ) from None
        return SparkConnection.of(self.conn_id, connection, self.deploy_mode)

    def _get_hook(self) -> SparkSubmitHook:
        """The provider's hook, built by the provider from the operator's settings with what this
        submit derives added: the operator's own ``conf``, ``py_files``, ``jars`` and ``env_vars``
        win or come along. The provider builds its hook from those public settings, so they are
        presented merged for the length of the call and left as the user set them."""
        derived = self._derived
        if derived is None:  # on_kill before any submit, or a caller of the provider's own
            return super()._get_hook()
        own = (self.conf, self.py_files, self.jars, self.env_vars, self.application_args)
        self.conf = {**derived.conf, **(self.conf or {})}
        self.py_files = ",".join(filter(None, [*derived.py_files, self.py_files]))
        self.jars = ",".join(filter(None, [*derived.jars, self.jars]))
        self.env_vars = {**derived.env_vars, **(self.env_vars or {})}
        self.application_args = derived.application_args
        try:
            return super()._get_hook()
        finally:
            self.conf, self.py_files, self.jars, self.env_vars, self.application_args = own

    def run_spark_submit(self, context: Any, arguments: list[str]) -> None:
        """Run spark-submit through the provider; ``arguments`` (the job's) reach it through
        ``_get_hook()``. Tests replace this with a fake job that reads them here."""
        super().execute(context)


def reports_root() -> Path:
    """Where quality reports and Data Docs live: ``$TIDEMARK_HOME/reports`` (embedded: .tidemark)."""
    return Path(os.environ.get("TIDEMARK_HOME", str(PROJECT / ".tidemark"))) / "reports"
