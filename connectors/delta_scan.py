"""A Delta table's rows read by pyarrow straight from its snapshot's data files.

deltalake (1.6) reads a table through its query engine, whose planning costs more than the
reading on the lake's small tables: on the aging benchmark's lake at day 10, the ledger's 3,621
rows in 13 files took 84 ms with ``DeltaTable.to_pyarrow_table`` and 19 ms through
``pyarrow.dataset`` over the same files; the seals' 244 rows in 32 files 67 ms against 17. The
Spark-free readers that run on every schedule tick (the persist look, the quality run) read this
way.

A plain file read is exact only where the snapshot's files hold exactly its rows: so
``scan_files`` refuses (``PlainReadUnsupported``) a table with deletion vectors (a file whose
deleted rows only the vector names) and a requested column that is a partition column (its
value lives in the add action, not the file). Column mapping is honoured (physical names are
read, the logical names returned). tidemark's own tables use neither deletion vectors nor
partition columns outside events, whose readers never ask for them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

# A file filter: the snapshot's add actions (pyarrow, flattened: "min.<column>", "partition.<column>")
# → a boolean mask of the files to read.
FileFilter = Callable[[object], object]


class PlainReadUnsupported(ValueError):
    """The table's files alone do not give its rows (deletion vectors, partition columns)."""


def plain_read_possible(table, columns: Sequence[str]) -> bool:
    """True when ``scan_files`` can read ``columns`` of ``table`` (a deltalake DeltaTable)."""
    protocol = table.protocol()
    if "deletionVectors" in (protocol.reader_features or ()):
        return False
    return not set(columns) & set(table.metadata().partition_columns)


def scan_files(
    table,
    table_path: str,
    columns: Sequence[str],
    keep_files: FileFilter | None = None,
    rows=None,
    skip_missing: bool = False,
):
    """``(columns of the rows, files read)``: the rows of the files ``keep_files`` keeps (all
    by default), filtered by the pyarrow expression ``rows`` (on logical names among ``columns``), as a pyarrow
    Table with the table's own column types; ``files read`` counts the Parquet files opened.
    ``skip_missing``: files the snapshot names but storage no longer has are left out (Spark's
    ignoreMissingFiles), rather than failing the read. PlainReadUnsupported when
    ``plain_read_possible`` says no."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    from connectors.lake_files import lake_filesystem

    if not plain_read_possible(table, columns):
        raise PlainReadUnsupported(
            f"{table_path}: deletion vectors or partition columns ({', '.join(columns)}): read it with deltalake"
        )
    schema = pa.schema(table.schema().to_arrow())
    physical = {
        field.name: (field.metadata or {}).get(b"delta.columnMapping.physicalName", field.name.encode()).decode()
        for field in schema
    }
    actions = pa.table(table.get_add_actions(flatten=True))
    if keep_files is not None and actions.num_rows:
        actions = actions.filter(keep_files(actions))
    filesystem, root = lake_filesystem(table_path)
    paths = [f"{root}/{path}" for path in actions.column("path").to_pylist()]
    if skip_missing and paths:
        from pyarrow import fs

        paths = [info.path for info in filesystem.get_file_info(paths) if info.type != fs.FileType.NotFound]
    wanted = pa.schema([pa.field(physical[column], schema.field(column).type) for column in columns])
    if not paths:
        return wanted.empty_table().rename_columns(list(columns)), 0
    dataset = ds.dataset(paths, schema=wanted, format="parquet", filesystem=filesystem)
    found = dataset.to_table(columns=[physical[c] for c in columns]).rename_columns(list(columns))
    return (found.filter(rows) if rows is not None else found), len(paths)


def read_rows(table, table_path: str, columns: Sequence[str], rows=None):
    """``columns`` of every row of ``table`` that the pyarrow expression ``rows`` keeps (all by
    default; it may name only ``columns``): by ``scan_files`` where a plain read is exact, by
    deltalake's own scan where it is not (a partition column asked for; a table with deletion
    vectors, which deltalake 1.6 refuses too, fails there naming the feature, as it always did)."""
    if not plain_read_possible(table, columns):
        return table.to_pyarrow_table(columns=list(columns), filters=rows)
    return scan_files(table, table_path, columns, rows=rows)[0]
