"""VACUUM of a stream's tables with the retention its configuration proved safe
(tidemark.maintenance_settings: ``vacuum_retain`` outlives every reader's ``reader_timeout``),
held by each table as its ``delta.deletedFileRetentionDuration``.

Delta's own guard (refusing a retention under 7 days) is turned off in the session that
vacuums, because tidemark enforces its rule when the configuration loads and a lake may choose a
shorter retention on purpose. The count of files deleted is the VACUUM END commit's own metric.
"""

from __future__ import annotations

import logging

from connectors.maintenance_look import VACUUMED
from tidemark.maintenance_result import VacuumedTable
from tidemark.stream_config import StreamConfig

log = logging.getLogger("tidemark.maintenance")

# The session settings the maintenance job needs: VACUUM commits START/END entries with metrics,
# and tidemark's retention rule stands in for Delta's 7-day check.
VACUUM_SESSION = {
    "spark.databricks.delta.vacuum.logging.enabled": "true",
    "spark.databricks.delta.retentionDurationCheck.enabled": "false",
}


def vacuum_tables(spark, stream: StreamConfig) -> list[VacuumedTable]:
    """VACUUM each of the stream's tables that exists (its six, the erasures table, the offline-device
    detector's periods: an erasure's deleted rows stay in their files until VACUUM); what each
    deleted."""
    from delta.tables import DeltaTable

    from spark_jobs.lake.table_creation import delta_table_exists
    from spark_jobs.lake.tables import LakeTables

    for key, value in VACUUM_SESSION.items():
        spark.conf.set(key, value)
    # VACUUM lists the table's files in as many tasks as this says, 10,000 by default: 36 s for
    # a tiny table on 2 cores, against 1.9 s in one task per core (measured, delta-spark 4.4).
    spark.conf.set(
        "spark.sql.sources.parallelPartitionDiscovery.parallelism", str(max(1, spark.sparkContext.defaultParallelism))
    )
    # Each table holds vacuum_retain as its own retention (LakeTables.ensure: set at creation, and
    # changed here only after the key changed; delta-spark 4.4 ignores VACUUM's RETAIN argument,
    # "Vacuum with retention threshold other than 0 hours is ignored", its warning says).
    LakeTables(spark, stream).ensure()
    done = []
    for table in VACUUMED:
        path = stream.table_path(table)
        if not delta_table_exists(spark, path):
            continue
        delta = DeltaTable.forPath(spark, path)
        delta.vacuum()  # with the table's own retention: vacuum_retain
        done.append(VacuumedTable(table, _deleted_files(delta)))
        log.info({"event": "table_vacuumed", **done[-1].to_json(), "retain_ms": stream.maintenance.vacuum_retain_ms})
    return done


def _deleted_files(delta) -> int:
    """numDeletedFiles of the newest VACUUM END commit (0 when VACUUM had nothing to delete)."""
    from pyspark.sql import functions as F

    row = (
        delta.history(5)
        .where(F.col("operation") == "VACUUM END")
        .orderBy(F.col("version").desc())
        .select("operationMetrics")
        .first()
    )
    return int((row.operationMetrics or {}).get("numDeletedFiles", 0)) if row else 0
