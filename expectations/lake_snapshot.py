"""A stream's tables as the quality checks read them without Spark: the newest snapshot of each
Delta table (deltalake), and of a big table only the Parquet files that can hold the rows asked
for (pyarrow), chosen from the snapshot's add actions: their partition values and min/max
statistics. One sealed hour's rows are read, not the table.

Pruning is conservative: a file is skipped only when its statistics prove it holds no row asked
for. Delta truncates statistics (timestamps to milliseconds, text to a 32-character prefix), so
bounds are compared with that slack, and a file without statistics is read. Rows are filtered
again after the read, so pruning changes the cost, never the answer.

Files the snapshot references but storage no longer has (a VACUUM that raced a writer, a file
deleted by hand) fail the read, unless the snapshot was opened with ``skip_missing_files``: then
they are left out, so the checks report their rows as missing (Spark's ignoreMissingFiles).
"""

from __future__ import annotations

from collections.abc import Sequence

from connectors.delta_scan import FileFilter
from expectations.quality_tables import CHECKED_TABLES, QualityTablesMissingError
from tidemark.stream_config import StreamConfig

STATS_PREFIX = 32  # characters of a text column Delta keeps in its min/max statistics


class LakeSnapshot:
    """Read-only access to one stream's tables at their newest versions, opened once per run."""

    def __init__(self, stream: StreamConfig, skip_missing_files: bool = False):
        self._stream = stream
        self._skip_missing = skip_missing_files
        self._tables: dict[str, object] = {}
        self.files_read: dict[str, int] = {}  # table → Parquet files read by read(), for logs and tests

    def require(self) -> None:
        """Raise QualityTablesMissingError for the first of the stream's tables that is missing.
        Each table is opened (the run reads every one of them): asking first whether it exists
        read each Delta log twice."""
        for table in CHECKED_TABLES:
            self.table(table)

    def table(self, name: str):
        """The table's ``deltalake.DeltaTable`` (QualityTablesMissingError when there is none)."""
        if name not in self._tables:
            from deltalake.exceptions import TableNotFoundError

            from connectors.lake_storage import open_delta_table

            path = self._stream.table_path(name)
            try:
                self._tables[name] = open_delta_table(path)
            except TableNotFoundError:
                raise QualityTablesMissingError(self._stream.name, name, path) from None
        return self._tables[name]

    def read_small(self, name: str, columns: Sequence[str]):
        """The whole of a small table (ledger, seals), ``columns`` only, as a pyarrow Table; a
        column the table does not have (yet: a lake no current writer has touched) is left out.
        Read from the snapshot's files by pyarrow (connectors.delta_scan: deltalake's own scan
        costs several times more on these tables), by deltalake where that cannot be exact."""
        from connectors.delta_scan import read_rows

        table = self.table(name)
        present = set(table.schema().to_arrow().names)
        # Never skipping missing files: a ledger or seals row left out would change what is checked.
        return read_rows(table, self._stream.table_path(name), [column for column in columns if column in present])

    def read(self, name: str, columns: Sequence[str], keep_files: FileFilter | None = None, rows=None):
        """``columns`` of the rows of table ``name`` in the files ``keep_files`` keeps, filtered
        by the pyarrow expression ``rows``; a pyarrow Table with the table's own column types
        (connectors.delta_scan.scan_files)."""
        from connectors.delta_scan import scan_files

        found, files = scan_files(
            self.table(name), self._stream.table_path(name), columns, keep_files, rows, self._skip_missing
        )
        self.files_read[name] = self.files_read.get(name, 0) + files
        return found


def stat(actions, kind: str, column: str):
    """The add actions' ``kind`` (min | max | null_count) statistic of ``column``, or None when
    no file recorded it."""
    name = f"{kind}.{column}"
    return actions.column(name) if name in actions.column_names else None
