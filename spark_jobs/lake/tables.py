"""A stream's Delta tables: created with explicit schemas, appended to, read.

Appends are plain blind appends: exactly-once is the persist job's (spark_jobs.persist.batch),
which knows the one batch of a run that can be a replay (spark_jobs.streaming_checkpoint) and
writes that one insert-only. Delta's own idempotent append (txnAppId, txnVersion) was the
first design; it makes Delta rebuild the table's transaction state on every commit (measured
on delta-spark 4.4: 0.6-0.7 s an append against 0.2 s for a plain one, three appends a batch).
Each commit's user metadata names its writer (see ``recent_commits``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from spark_jobs.lake.delta_conflicts import delta_conflicts
from spark_jobs.lake.table_creation import create_delta_table, delta_table_exists
from tidemark.live_routing import LiveRouting, RoutedRange
from tidemark.stream_config import StreamConfig
from tidemark.table_schemas import (
    EVENTS_PARTITIONING,
    RENAMED_COLUMNS,
    SEALS_COLUMNS,
    claims_columns,
    events_columns,
    late_columns,
    ledger_columns,
    quarantine_columns,
)
from tidemark.write_claims import NO_WATERMARK_MS

_log = logging.getLogger("tidemark.lake_tables")

TABLES = ("events", "late", "quarantine", "ledger", "seals", "claims")
# The tables a persist batch needs before it writes its events, in the order they are made:
# the ledger first, so that a lake whose events hold a commit always has a ledger (a live run
# that lost its checkpoint resumes from the ledger, and learns from it and the events what a
# crashed run wrote: spark_jobs.persist.lake_resume); the events; the claims its overlap guard
# reads. The others are needed only once the events are written (the seals) or when a batch
# holds late or refused records.
FIRST_NEEDED = ("ledger", "events", "claims")

# A commit that lost to a concurrent one (Delta's optimistic concurrency) is retried this many
# times against what the table then holds; each retry waits a little longer (seconds, doubled).
MERGE_ATTEMPTS = 8
FIRST_RETRY_WAIT_S = 0.2

# The ledger and the seals get a few rows a batch: one small file per commit, thousands a month,
# and every reader (the watermark page, the checks) opens them all. The maintenance run compacts
# them (spark_jobs.maintenance.compaction); the tables also carry Delta's auto compaction for
# writers other than tidemark's, whose sessions turn it off (connectors.spark_session: its
# post-commit hook cost each run's first batch about 5 s).
_SMALL_APPEND_TABLES = ("ledger", "seals", "claims")
# The tables a record of the log is persisted in, exactly one of them.
PERSISTED = ("events", "late", "quarantine")
_AUTO_COMPACT = {"delta.autoOptimize.autoCompact": "true"}
RETENTION_PROPERTY = "delta.deletedFileRetentionDuration"


def vacuum_retention(retain_ms: int) -> str:
    """``maintenance.vacuum_retain`` as the table property's interval."""
    return f"interval {retain_ms // 1000} seconds"


@dataclass(frozen=True)
class MergeOutcome:
    """What one insert-only write committed: ``inserted`` rows (the MERGE's metrics), after
    ``conflicts_retried`` commits that lost to a concurrent writer."""

    inserted: int
    conflicts_retried: int


class LakeTables:
    """The tables of ``stream``, or of its shadow table set ``shadow``: the same five tables
    under ``<stream's folder>/shadow/<name>/``, written by a backfill that is compared with live
    and read by nothing else."""

    def __init__(self, spark, stream: StreamConfig, shadow: str | None = None):
        self._spark = spark
        self._stream = stream
        self._shadow = shadow
        # Kafka offsets (BIGINT) or Kinesis sequence numbers (ordered text): every position this
        # class puts into a filter or reads from a row goes through it (tidemark.log_position).
        self.positions = stream.source.position_type

    def path(self, table: str) -> str:
        if self._shadow is None:
            return self._stream.table_path(table)
        return f"{self._stream.table_path('shadow')}/{self._shadow}/{table}"

    def exists(self, table: str) -> bool:
        """Whether ``table`` has its first commit (spark_jobs.lake.table_creation: a folder, or a
        log folder, without one is not a table yet), asked of the file system alone: no Delta
        work, which in a fresh JVM costs seconds of class loading."""
        return delta_table_exists(self._spark, self.path(table))

    def ensure(self, tables: tuple[str, ...] | None = None) -> set[str]:
        """Create the tables that do not exist yet, and bring those an older tidemark made to
        today's layout; returns the names of those it created. ``tables``: only these, in this
        order (a name the set lacks, the claims of a shadow set, is passed over); None: all.

        Every job that writes or reads them calls it before its first look at any of them, so a
        table more than one job touches exists before they can race on it: the stream's claims
        table too (its set, not a shadow set's, which only its own backfill writes). Safe when
        other jobs of the stream ensure the same tables at the same moment: one of them creates
        each table, the others find it (spark_jobs.lake.table_creation)."""
        layouts = {
            "events": (events_columns(self._stream.payload, self.positions), EVENTS_PARTITIONING),
            "late": (late_columns(self._stream.payload, self.positions), ()),
            "quarantine": (quarantine_columns(self.positions), ()),
            "ledger": (ledger_columns(self.positions), ()),
            "seals": (SEALS_COLUMNS, ()),
        }
        if self._shadow is None:
            layouts["claims"] = (claims_columns(self.positions), ())
        # One after the other: created concurrently they took as long (measured on 2 cores: the
        # first Delta commit of a session loads Delta's classes, and the others wait for it).
        names = [table for table in (tables or layouts) if table in layouts]
        return {table for table in names if self._ensure_table(table, *layouts[table])}

    def _ensure_table(self, table: str, columns: list[tuple[str, str]], partitioning: tuple[str, ...]) -> bool:
        """Create ``table`` if it does not exist (True), else add what an older tidemark's lacks (False)."""
        properties = {
            **(_AUTO_COMPACT if table in _SMALL_APPEND_TABLES else {}),
            # VACUUM's retention lives in the table (delta-spark 4.4 ignores VACUUM's RETAIN), made
            # at creation so that the maintenance job's VACUUM needs no metadata commit beside live.
            RETENTION_PROPERTY: vacuum_retention(self._stream.maintenance.vacuum_retain_ms),
        }
        if create_delta_table(self._spark, self.path(table), columns, partitioning, properties):
            return True
        # There already, or made by another job a moment ago (then in this layout: nothing to do).
        self._rename_old_columns(table)
        self._add_missing_columns(table, columns)
        self._add_missing_properties(table, properties)
        return False

    def _add_missing_properties(self, table: str, properties: dict[str, str]) -> None:
        """A table created by an older tidemark gains the table properties added since. Read
        from the Delta log with deltalake: a Spark job (DESCRIBE DETAIL) on every run start cost
        each run seconds in a fresh JVM."""
        from connectors.lake_reader import table_properties

        if not properties:
            return
        try:
            current = table_properties(self.path(table))
        except Exception:  # a store deltalake is not set up for (an S3 endpoint only Hadoop knows)
            current = self._properties(table)
        missing = {k: v for k, v in properties.items() if current.get(k) != v}
        if missing:
            settings = ", ".join(f"'{k}' = '{v}'" for k, v in missing.items())
            self._alter(
                f"ALTER TABLE delta.`{self.path(table)}` SET TBLPROPERTIES ({settings})",
                lambda: all(self._properties(table).get(k) == v for k, v in missing.items()),
            )

    def _properties(self, table: str) -> dict[str, str]:
        from delta.tables import DeltaTable

        return DeltaTable.forPath(self._spark, self.path(table)).detail().first().properties or {}

    def _rename_old_columns(self, table: str) -> None:
        """A table written by an older tidemark gains the columns' new names
        (tidemark.table_schemas.RENAMED_COLUMNS) without losing a row: Delta column mapping by name
        turns a rename into one metadata commit; the Parquet files keep the old name underneath.

        Readers: Spark and deltalake's QueryBuilder read the new name. deltalake 1.6.6's pyarrow
        reader (``to_pyarrow_table``) returns nulls for a renamed column of such a table, so
        tidemark's deltalake reads never select a renamed column (they read neither).
        """
        existing = self._column_names(table)
        pending = [(old, new) for old, new in RENAMED_COLUMNS.get(table, ()) if old in existing and new not in existing]
        if not pending:
            return
        path = self.path(table)
        self._alter(
            f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
            "'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')",
            lambda: self._properties(table).get("delta.columnMapping.mode") == "name",
        )
        for old, new in pending:
            self._alter(
                f"ALTER TABLE delta.`{path}` RENAME COLUMN `{old}` TO `{new}`",
                lambda new=new: new in self._column_names(table),
            )
        _log.info({"event": "columns_renamed", "table": path, "renamed": [f"{old} -> {new}" for old, new in pending]})

    def _add_missing_columns(self, table: str, columns: list[tuple[str, str]]) -> None:
        """A table written by an older tidemark gains the columns added since (null in old rows),
        each in its place in the schema, so every lake has one layout; without this the next
        append would fail on the schema."""
        existing = self._column_names(table)
        for position, (name, sql_type) in enumerate(columns):
            if name in existing:
                continue
            place = "FIRST" if position == 0 else f"AFTER `{columns[position - 1][0]}`"
            self._alter(
                f"ALTER TABLE delta.`{self.path(table)}` ADD COLUMNS (`{name}` {sql_type} {place})",
                lambda name=name: name in self._column_names(table),
            )
            existing.add(name)

    def _column_names(self, table: str) -> set[str]:
        return {field.name for field in self.read(table).schema.fields}

    def _alter(self, statement: str, holds) -> None:
        """Run the ALTER TABLE ``statement``. Another job of the stream upgrading the same table
        at the same moment makes one of the two fail (a commit conflict, or a column that exists
        by now): then what the statement was for (``holds()``) must be true, and it is done."""
        from pyspark.errors import AnalysisException

        conflicts = delta_conflicts()  # imported before the commit (see delta_conflicts)
        try:
            self._spark.sql(statement)
        except (*conflicts, AnalysisException):
            if not holds():
                raise

    def append(self, frame, table: str, writer: str) -> None:
        """Append ``frame`` to ``table``; the commit's user metadata names ``writer``."""
        frame.write.format("delta").mode("append").option("userMetadata", writer).save(self.path(table))

    def holds_ledger_steps(self, writer: str, step_ids: list[int]) -> bool:
        """Whether the ledger has rows of ``writer`` under any of ``step_ids`` (a batch's ledger
        rows are one commit: one of them there means all are)."""
        from pyspark.sql import functions as F

        rows = self.read("ledger").where((F.col("writer") == writer) & F.col("step_id").isin(step_ids))
        return rows.limit(1).count() > 0

    def sealed_among(self, hours_ms: list[int]) -> set[int]:
        """Those of ``hours_ms`` (hour starts, ms since the epoch) the seals table holds."""
        from pyspark.sql import functions as F

        rows = (
            self.read("seals").select(F.unix_millis("hour").alias("hour")).where(F.col("hour").isin(hours_ms)).collect()
        )
        return {row.hour for row in rows}

    def recent_commits(self, table: str, limit: int) -> list[tuple[int, str | None]]:
        """The newest ``limit`` commits of ``table`` as (version, writer), newest first; writer:
        the writer ``append`` wrote it under, None for other commits. Reads the commit
        history, not the table."""
        from delta.tables import DeltaTable

        rows = (
            DeltaTable.forPath(self._spark, self.path(table)).history(limit).select("version", "userMetadata").collect()
        )
        return sorted(((row.version, row.userMetadata) for row in rows), reverse=True)

    def last_live_global_watermark_ms(self) -> int | None:
        """The G of the live job's latest ledger rows (G never moves back, so the largest); None
        before the first batch that had one."""
        import pyarrow.compute as pc

        table = self._live_ledger([[]], ["global_watermark"])
        return None if table.num_rows == 0 else pc.max(_ms(table["global_watermark"])).as_py()

    def _live_rows(self, conditions: list[list[tuple]]) -> list[tuple[int, int, int, int | None]]:
        """(partition, start, end, G in ms or None) of the live ledger rows that meet any of
        ``conditions`` (see ``_live_ledger``)."""
        table = self._live_ledger(conditions, ["source_partition", "start_offset", "end_offset", "global_watermark"])
        position = self.positions.from_column
        return [
            (partition, position(start), position(end), g)
            for partition, start, end, g in zip(
                table["source_partition"].to_pylist(),
                table["start_offset"].to_pylist(),
                table["end_offset"].to_pylist(),
                _ms(table["global_watermark"]).to_pylist(),
            )
        ]

    def _live_ledger(self, conditions: list[list[tuple]], columns: list[str]):
        """``columns`` of the live ledger rows that meet any of ``conditions`` (delta-rs filters,
        each a list of (column, op, value) that must all hold), as a pyarrow Table, read with
        delta-rs: the ledger is a small table (DESIGN.md, the Spark line), and a Spark job for
        each of these questions cost a recovery or a backfill about a second. No ledger: no rows."""
        import pyarrow as pa

        from connectors.lake_storage import open_delta_table

        if not self.exists("ledger"):
            return pa.table({name: pa.array([], pa.null()) for name in columns})
        return open_delta_table(self.path("ledger")).to_pyarrow_table(
            columns=columns, filters=[[("mode", "=", "live"), *condition] for condition in conditions]
        )

    def accepted_losses(self) -> list:
        """The ranges a person accepted as lost (tidemark.accepted_loss.AcceptedLoss), from the
        ledger's ``accepted_loss`` rows, read with delta-rs; none without a ledger."""
        from connectors.accepted_losses import read_accepted_losses

        return read_accepted_losses(self._stream, self.path("ledger")) if self.exists("ledger") else []

    def non_live_ranges(self) -> list[tuple[int, int, int]]:
        """(partition, start, end) of every non-empty ledger range a backfill or recovery wrote."""
        from pyspark.sql import functions as F

        rows = (
            self.read("ledger")
            .where(F.col("mode").isin("backfill", "recovery") & (F.col("end_offset") > F.col("start_offset")))
            .select("source_partition", "start_offset", "end_offset")
            .distinct()
            .collect()
        )
        position = self.positions.from_column
        return sorted((row.source_partition, position(row.start_offset), position(row.end_offset)) for row in rows)

    def insert_missing(
        self, frame, table: str, ranges: dict[int, tuple[int, int]], present_in: tuple[str, ...] = PERSISTED
    ) -> MergeOutcome:
        """Write the rows of ``frame`` whose (source_partition, source_offset) none of
        ``present_in`` (events, late and quarantine) holds yet; ``ranges`` ({partition: (start,
        end)}) bounds the offsets ``frame`` can hold, so only that part of the tables is looked
        at. Returns how many rows this commit inserted (the MERGE's own metrics) and how many
        conflicts it retried. A quarantine re-drive looks in events and late only: the
        quarantine row it moves stays as the record's history.

        A record lives in exactly one of the three tables, and two jobs may route it
        differently (late for one, on time for the other), so presence is checked across all
        three. The insert is a Delta MERGE that inserts only unmatched rows and reads the whole
        table: a concurrent commit that added rows to it makes this one fail (Delta's
        ConcurrentAppendException), and it is run again against what the table then holds, so
        two writers inserting the same pair never both commit it.
        """
        import random
        import time

        conflicts = delta_conflicts()  # imported before the commit (see delta_conflicts)
        for attempt in range(MERGE_ATTEMPTS):
            try:
                return MergeOutcome(self._merge_missing(frame, table, ranges, present_in), attempt)
            except conflicts:
                if attempt == MERGE_ATTEMPTS - 1:
                    raise
                # Jittered, so two writers that collided do not collide again in step.
                time.sleep(FIRST_RETRY_WAIT_S * 2**attempt * (0.5 + random.random()))
        raise AssertionError("unreachable")

    def _merge_missing(self, frame, table: str, ranges: dict[int, tuple[int, int]], present_in: tuple[str, ...]) -> int:
        from delta.tables import DeltaTable

        key = ["source_partition", "source_offset"]
        missing = frame.join(self.persisted_offsets(ranges, present_in), key, "left_anti")
        condition = "t.source_partition = s.source_partition AND t.source_offset = s.source_offset"
        if table == "events":
            # The same record has the same event hour wherever it was decoded: lets Delta prune.
            condition += " AND t.event_date = s.event_date AND t.event_hour = s.event_hour"
        metrics = (
            DeltaTable.forPath(self._spark, self.path(table))
            .alias("t")
            .merge(missing.alias("s"), condition)
            .whenNotMatchedInsertAll()
            .execute()
            .first()
        )
        return int(metrics["num_inserted_rows"]) if metrics is not None else 0

    def persisted_offsets(self, ranges: dict[int, tuple[int, int]], present_in: tuple[str, ...] = PERSISTED):
        """(source_partition, source_offset) of the records ``present_in`` (events, late and
        quarantine) hold in ``ranges`` ({partition: (start, end)}, end exclusive; None: no end)."""
        from functools import reduce

        if not ranges:
            return self._spark.createDataFrame([], f"source_partition INT, source_offset {self.positions.sql_type}")
        within = self.offset_filter(ranges)
        tables = [self.read(table).where(within).select("source_partition", "source_offset") for table in present_in]
        return reduce(lambda a, b: a.unionByName(b), tables)

    def offset_filter(self, ranges: dict[int, tuple[int, int | None]]):
        """A filter on (source_partition, source_offset) holding ``ranges`` ({partition: (start,
        end)}, end exclusive; None: no end); at least one range."""
        from functools import reduce

        from pyspark.sql import functions as F

        column = self.positions.to_column
        return reduce(
            lambda either, bound: either | bound,
            [
                (F.col("source_partition") == p)
                & (F.col("source_offset") >= column(start))
                & (F.lit(True) if end is None else F.col("source_offset") < column(end))
                for p, (start, end) in sorted(ranges.items())
            ],
        )

    def outside(self, spans: dict[int, list[tuple[int, int]]]):
        """A filter on (source_partition, source_offset) keeping the rows outside ``spans``
        ({partition: [(start, end)]}, end exclusive); at least one span."""
        from functools import reduce

        from pyspark.sql import functions as F

        column = self.positions.to_column
        inside = reduce(
            lambda either, bound: either | bound,
            [
                (F.col("source_partition") == p)
                & (F.col("source_offset") >= column(start))
                & (F.col("source_offset") < column(end))
                for p, parts in sorted(spans.items())
                for start, end in parts
            ],
        )
        return ~inside

    def live_routing(self, ranges: dict[int, tuple[int, int]]) -> LiveRouting:
        """The G live routed each offset of ``ranges`` ({partition: (start, end)}) under: the live
        ledger rows overlapping them. A row without G is a batch planned before G existed (the
        live job's first): nothing in it was late, so its offsets are routed under
        NO_WATERMARK_MS, not under live's latest G, which would send them to late on replay.
        (Rows of a ledger older than its global_watermark column read the same way.)"""
        if not ranges:
            return LiveRouting(())
        column = self.positions.to_column
        overlapping = [
            [("source_partition", "=", p), ("end_offset", ">", column(start)), ("start_offset", "<", column(end))]
            for p, (start, end) in sorted(ranges.items())
        ]
        return LiveRouting(
            RoutedRange(partition, start, end, NO_WATERMARK_MS if g is None else g)
            for partition, start, end, g in self._live_rows(overlapping)
        )

    def read(self, table: str):
        return self._spark.read.format("delta").load(self.path(table))

    def live_global_watermark_at_ms(self, partition: int, offset: int) -> int | None:
        """The G (ms since the epoch, UTC) to replay ``offset`` of ``partition`` under: the G of
        the live ledger range that covered it (what the live job routed those records under),
        else the live job's latest G (offsets it has not reached yet); None when the live job
        never recorded one. Recovery pins it and never moves it."""
        at = self.positions.to_column(offset)
        covering = self._live_rows(
            [[("source_partition", "=", partition), ("start_offset", "<=", at), ("end_offset", ">", at)]]
        )
        watermarks = [g for _, _, _, g in covering if g is not None]
        return max(watermarks) if watermarks else self.last_live_global_watermark_ms()


def _ms(timestamps):
    """A pyarrow column of timestamps as ms since the epoch (UTC), nulls kept."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.divide(pc.cast(pc.cast(timestamps, pa.timestamp("us", tz="UTC")), pa.int64()), 1000)
