"""The stream's ``erasures`` table: the records erased (tidemark erase), one row each, read by every
job that writes records so that none writes an erased record again.

Made by the first erasure of a stream (only the erasure job writes it; two erasures making it at
once are safe, spark_jobs.lake.table_creation). Until then every reader finds no table and
nothing erased, at the cost of a look at the file system. Writers ask for the table's newest
version each batch (a look at its log) and read the rows of their ranges only when it moved, as
they do for claims.
"""

from __future__ import annotations

from tidemark.table_schemas import erasures_columns
from tidemark.write_claims import covered_parts

ERASURES = "erasures"


class ErasuresTable:
    def __init__(self, spark, tables):
        """``tables``: spark_jobs.lake.tables.LakeTables of the stream (not a shadow set: a
        backfill into a shadow set skips the stream's erased records too)."""
        self._spark = spark
        self._tables = tables
        self._version = -1
        self._erased: list[tuple[int, int]] = []  # (partition, position), ascending

    @property
    def path(self) -> str:
        return self._tables.path(ERASURES)

    def ensure(self) -> None:
        """Create the table if no erasure made it yet."""
        from spark_jobs.lake.table_creation import create_delta_table

        create_delta_table(self._spark, self.path, erasures_columns(self._tables.positions))

    def record(self, frame, erasure_id: str) -> None:
        """Append the erased records' rows (``frame``, the table's columns); the commit's user
        metadata is ``erasure:<id>``."""
        self._tables.append(frame, ERASURES, f"erasure:{erasure_id}")

    def read_keys(self):
        """(source_partition, source_offset) of every erased record, a Spark DataFrame (the table
        exists: ``ensure`` first)."""
        return self._tables.read(ERASURES).select("source_partition", "source_offset")

    def erased(self, ranges: dict[int, tuple[int, int]]) -> dict[int, list[tuple[int, int]]]:
        """The erased positions within ``ranges`` ({partition: (start, end)}), as spans
        {partition: [(start, end)]} (consecutive positions joined); {} when nothing is erased."""
        self._refresh()
        if not self._erased or not ranges:
            return {}
        return covered_parts(ranges, ((p, position, position + 1) for p, position in self._erased))

    def predicates(self) -> list[str]:
        """The predicates of every erasure so far (tidemark.erasure_predicate text), oldest first."""
        from connectors.lake_storage import open_delta_table
        from spark_jobs.lake.table_creation import delta_table_exists

        if not delta_table_exists(self._spark, self.path):
            return []
        rows = open_delta_table(self.path).to_pyarrow_table(columns=["predicate", "requested_at"])
        ordered = sorted(
            zip(rows.column("requested_at").to_pylist(), rows.column("predicate").to_pylist(), strict=True)
        )
        return list(dict.fromkeys(text for _, text in ordered))

    def holds_any(self) -> bool:
        """Whether any record of the stream is erased."""
        self._refresh()
        return bool(self._erased)

    def _refresh(self) -> None:
        from connectors.lake_storage import open_delta_table
        from spark_jobs.lake.table_creation import delta_table_exists

        if self._version < 0 and not delta_table_exists(self._spark, self.path):
            return  # no erasure yet: asked again next batch
        table = open_delta_table(self.path)
        version = table.version()
        if version == self._version:
            return
        rows = table.to_pyarrow_table(columns=["source_partition", "source_offset"])
        position = self._tables.positions.from_column
        self._erased = sorted(
            zip(
                rows.column("source_partition").to_pylist(),
                (position(o) for o in rows.column("source_offset").to_pylist()),
                strict=True,
            )
        )
        self._version = version
