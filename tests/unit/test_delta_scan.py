"""connectors.delta_scan reads a Delta table's files with pyarrow and answers as deltalake's own
scan does, or refuses where a plain file read would not be exact."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from deltalake import DeltaTable, write_deltalake

from connectors.delta_scan import PlainReadUnsupported, plain_read_possible, read_rows, scan_files


def test_the_files_read_give_the_rows_deltalake_gives_across_appends_a_new_column_and_a_filter(tmp_path):
    path = str(tmp_path / "ledger")
    write_deltalake(path, pa.table({"step_id": pa.array([1, 2], pa.int64()), "mode": ["live", "backfill"]}))
    write_deltalake(path, pa.table({"step_id": pa.array([3], pa.int64()), "mode": ["live"]}), mode="append")
    write_deltalake(
        path,
        pa.table({"step_id": pa.array([4], pa.int64()), "mode": ["live"], "writer": ["w"]}),
        mode="append",
        schema_mode="merge",
    )
    table = DeltaTable(path)

    rows, files = scan_files(table, path, ["step_id", "writer", "mode"], rows=ds.field("mode") == "live")
    expected = table.to_pyarrow_table(columns=["step_id", "writer", "mode"], filters=[("mode", "=", "live")])

    assert files == 3
    assert rows.schema == expected.schema
    assert sorted(rows.to_pylist(), key=lambda r: r["step_id"]) == sorted(
        expected.to_pylist(), key=lambda r: r["step_id"]
    )
    assert rows.column("writer").to_pylist().count(None) == 2  # the files written before the column


def test_a_table_with_deletion_vectors_or_a_partition_column_asked_for_is_refused(tmp_path):
    vectors = str(tmp_path / "vectors")
    write_deltalake(vectors, pa.table({"a": [1, 2]}), configuration={"delta.enableDeletionVectors": "true"})
    partitioned = str(tmp_path / "partitioned")
    write_deltalake(partitioned, pa.table({"a": [1, 2], "day": ["x", "y"]}), partition_by=["day"])

    assert not plain_read_possible(DeltaTable(vectors), ["a"])
    assert not plain_read_possible(DeltaTable(partitioned), ["a", "day"])
    assert plain_read_possible(DeltaTable(partitioned), ["a"])
    with pytest.raises(PlainReadUnsupported, match="read it with deltalake"):
        scan_files(DeltaTable(vectors), vectors, ["a"])
    # read_rows reads a partition column through deltalake instead, filter and all.
    found = read_rows(DeltaTable(partitioned), partitioned, ["a", "day"], ds.field("a") > 1)
    assert found.to_pylist() == [{"a": 2, "day": "y"}]
