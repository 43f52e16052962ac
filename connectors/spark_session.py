"""The Spark session every tidemark job uses: Delta enabled, UTC, sized for the machine it runs on,
with the lake's storage settings (connectors.lake_storage: S3A and the S3 LogStore every writer
must share)."""

from __future__ import annotations

import os

from connectors.jars import delta_classpath


def batch_job_conf(stream, max_records_per_batch: int | None = None) -> dict[str, str]:
    """Settings of a job that reads ``stream`` in batches of its row budget: a driver heap sized
    to the budget (tidemark.batch_memory), unless TIDEMARK_DRIVER_MEMORY says otherwise. Raises
    tidemark.batch_memory.BatchMemoryError, naming the key, when the budget cannot fit: call it
    before any work."""
    from tidemark.batch_memory import machine_memory_mib, persist_driver_memory_mib

    sized = persist_driver_memory_mib(stream, machine_memory_mib(), max_records_per_batch)
    return {"spark.driver.memory": os.environ.get("TIDEMARK_DRIVER_MEMORY", f"{sized}m")}


def lake_spark_session(app_name: str, extra_conf: dict[str, str] | None = None):
    """Get or create the session. Under spark-submit the master and classpath come from the
    submit; run directly (tests, benchmarks) it starts local[*] with the Delta jars itself."""
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.appName(app_name)
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        # Event times, hours and dates are UTC everywhere; the machine's zone must not leak in.
        .config("spark.sql.session.timeZone", "UTC")
        # One micro-batch is small next to a cluster: the default 200 shuffle tasks cost more than they do.
        .config("spark.sql.shuffle.partitions", os.environ.get("TIDEMARK_SHUFFLE_PARTITIONS", "4"))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        # Idempotent appends (txnAppId) make Delta rebuild the table's transaction state with a
        # Spark job of this many tasks; at the default 50 that costs seconds per commit for a
        # micro-batch of a few thousand rows (measured: 3-4 s at 50, about 1 s at 1).
        .config("spark.databricks.delta.snapshotPartitions", os.environ.get("TIDEMARK_DELTA_SNAPSHOT_PARTITIONS", "1"))
        # Delta's auto compaction, on for the ledger, seals and claims tables (their property), is
        # off in tidemark's own sessions: its post-commit hook computes a table's whole state with
        # Spark jobs the first time a JVM commits to it, about 5 s of every run's first batch on
        # 2 cores (the ledger and the seals; measured on make bench's backlog: seals and ledger
        # commits 5.61 s with it, 0.88 s without). The maintenance run compacts both tables
        # whole once they hold maintenance.compact_min_files files, every hour by default.
        .config("spark.databricks.delta.autoCompact.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # The decoded batch is wider than Spark's default of 25 fields: without this every job
        # logs a "Truncated the string representation of a plan" warning nobody can act on.
        .config("spark.sql.debug.maxToStringFields", "200")
        # A task log in the Airflow UI is read by people: tidemark's own lines (batch persisted,
        # records, late, sealed hours) and Spark's warnings and errors, not Spark's INFO chatter
        # (about 600 lines a micro-batch). Applies from the moment the SparkContext starts.
        .config("spark.log.level", os.environ.get("TIDEMARK_SPARK_LOG_LEVEL", "WARN"))
    )
    # spark-submit starts the JVM first and hands the Python process its gateway port; then master
    # and classpath are the submit's, and setting them here would override the user's choice.
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = (
            builder.master(os.environ.get("TIDEMARK_SPARK_MASTER", "local[*]"))
            .config("spark.driver.extraClassPath", delta_classpath())
            .config("spark.executor.extraClassPath", delta_classpath())
            .config("spark.ui.enabled", os.environ.get("TIDEMARK_SPARK_UI", "false"))
            .config("spark.driver.memory", os.environ.get("TIDEMARK_DRIVER_MEMORY", "2g"))
        )
    from connectors.lake_storage import spark_conf

    for key, value in {**spark_conf(), **(extra_conf or {})}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    hand_connection_settings_to_workers(session.sparkContext, os.environ)
    return session


def hand_connection_settings_to_workers(context, environ) -> list[str]:
    """Put the Kafka connections' settings this process holds (tidemark.kafka_access's
    ``TIDEMARK_KAFKA_CONN_*``) and the schema registries' logins (tidemark.registry_access's
    ``TIDEMARK_REGISTRY_CONN_*``) into ``context.environment``, the variables PySpark hands to every
    Python worker it starts for a function or a data source registered after this call, on this
    machine or a cluster's executors; returns the variables' names.

    Why not ``spark.executorEnv``: that is a Spark setting, shown (redacted by name) in the UI and
    the event log, and it applies only to a session it creates; ``environment`` is never a
    setting, and it works on a session that already runs (tests, a notebook)."""
    from tidemark import kafka_access, registry_access

    prefixes = (kafka_access.SETTINGS_PREFIX, registry_access.SETTINGS_PREFIX)
    names = sorted(name for name in environ if name.startswith(prefixes))
    for name in names:
        context.environment[name] = environ[name]
    return names
