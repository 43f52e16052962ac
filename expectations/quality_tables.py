"""The lake tables the quality checks read, and the error when a stream has none.

The checks never create tables: a check over a table that does not exist would report a
perfectly empty, perfectly "complete" stream. A missing table is an error that names the
stream and the path, so the person who configured the wrong lake root sees it at once.
"""

from __future__ import annotations

from tidemark.stream_config import StreamConfig

CHECKED_TABLES = ("events", "late", "quarantine", "ledger", "seals")


class QualityTablesMissingError(RuntimeError):
    """A table the quality checks read does not exist (or is not a Delta table)."""

    def __init__(self, stream: str, table: str, path: str):
        super().__init__(
            f"stream {stream!r}: the {table} table does not exist at {path}; the quality checks read "
            f"the tables the persist job creates: run it first, or check the stream's lake.root"
        )
        self.stream = stream
        self.table = table
        self.path = path


class QualityTables:
    """Read access to one stream's tables for the checks, through Spark (the sweep's reader;
    expectations.lake_snapshot reads them without Spark)."""

    def __init__(self, spark, stream: StreamConfig):
        self._spark = spark
        self._stream = stream

    def require(self) -> None:
        """Raise QualityTablesMissingError for the first of the stream's tables that is missing."""
        from connectors.lake_storage import is_delta_table

        for table in CHECKED_TABLES:
            path = self._stream.table_path(table)
            # delta-rs's answer, not Delta's DeltaTable.isDeltaTable, which caches a folder it saw
            # without a first commit as "no table" for the JVM's life (spark_jobs.lake.table_creation).
            if not is_delta_table(path):
                raise QualityTablesMissingError(self._stream.name, table, path)

    def read(self, table: str):
        return self._spark.read.format("delta").load(self._stream.table_path(table))
