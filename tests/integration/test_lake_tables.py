"""spark_jobs.lake.tables: on a lake an older tidemark wrote, its tables gain the new columns and
the new names of renamed ones (tidemark.table_schemas.RENAMED_COLUMNS), keeping every row; a
table exists for every reader only once its first commit does, and the tables are made over what
a creator left half-way (issue 36). Drivers making one lake's tables at the same moment:
tests/integration/test_log_stores.py."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest

from harness.persist_job import REPO
from spark_jobs.lake.tables import LakeTables
from tidemark.stream_config import load_stream
from tidemark.table_schemas import LEDGER_COLUMNS, QUARANTINE_COLUMNS, SEALS_COLUMNS, ddl

pytestmark = pytest.mark.integration

ADDED_SINCE = ("data_records", "open_transaction_since", "held_by_open_transaction")


def _old_names(columns, renamed_to: str) -> list[tuple[str, str]]:
    """``columns`` as an older tidemark named them: ``renamed_to`` was ``batch_id``."""
    return [("batch_id" if name == renamed_to else name, sql_type) for name, sql_type in columns]


def test_a_ledger_without_the_new_columns_gains_them_and_keeps_its_rows(spark, tmp_path):
    stream = load_stream(
        REPO / "conf" / "streams.yaml",
        "telemetry",
        {"TIDEMARK_LAKE_ROOT": str(tmp_path / "lake"), "TIDEMARK_CHECKPOINT_ROOT": str(tmp_path / "checkpoints")},
    )
    old_columns = _old_names([(n, t) for n, t in LEDGER_COLUMNS if n not in ADDED_SINCE], renamed_to="step_id")
    old_row = {name: None for name, _ in old_columns} | {
        "stream": "telemetry",
        "batch_id": 0,
        "source_partition": 3,
        "start_offset": 0,
        "end_offset": 10,
        "records": 10,
    }
    spark.createDataFrame([tuple(old_row[n] for n, _ in old_columns)], ddl(old_columns)).write.format("delta").save(
        stream.table_path("ledger")
    )

    # Seals where batch_id was Spark's micro-batch: it becomes micro_batch_id.
    old_seals = _old_names(SEALS_COLUMNS, renamed_to="micro_batch_id")
    spark.createDataFrame([("telemetry", None, None, None, 7)], ddl(old_seals)).write.format("delta").save(
        stream.table_path("seals")
    )

    # A quarantine from before issue 39: no record_headers.
    old_quarantine = [(n, t) for n, t in QUARANTINE_COLUMNS if n != "record_headers"]
    spark.createDataFrame(
        [tuple({"source_partition": 1, "source_offset": 5, "raw_value": b"{"}.get(n) for n, _ in old_quarantine)],
        ddl(old_quarantine),
    ).write.format("delta").save(stream.table_path("quarantine"))

    tables = LakeTables(spark, stream)
    # The old ledger, seals and quarantine are upgraded, not created; the three missing tables
    # are created, once (the claims table too: every job makes it before any job can race on it).
    assert tables.ensure() == {"events", "late", "claims"}
    assert tables.ensure() == set()  # idempotent

    # The ledger and the seals compact their small files (one per batch) as they go: the old
    # ledger gains the property, the new seals table is created with it, the events do not.
    def properties(table):
        return spark.sql(f"DESCRIBE DETAIL delta.`{stream.table_path(table)}`").first().properties

    assert properties("ledger").get("delta.autoOptimize.autoCompact") == "true"
    assert properties("seals").get("delta.autoOptimize.autoCompact") == "true"
    assert "delta.autoOptimize.autoCompact" not in properties("events")

    ledger = tables.read("ledger")
    assert [field.name for field in ledger.schema.fields] == [name for name, _ in LEDGER_COLUMNS], "each in its place"
    (row,) = ledger.collect()
    assert (row.step_id, row.source_partition, row.end_offset, row.records) == (0, 3, 10, 10), "renamed in place"
    assert "batch_id" not in ledger.columns
    (seal,) = tables.read("seals").collect()
    assert seal.micro_batch_id == 7 and [f.name for f in tables.read("seals").schema.fields] == [
        n for n, _ in SEALS_COLUMNS
    ]
    # A rename is a metadata commit under column mapping: no data file was rewritten.
    assert properties("ledger").get("delta.columnMapping.mode") == "name"
    assert "delta.columnMapping.mode" not in properties("events"), "a new table needs no mapping"
    assert (row.data_records, row.open_transaction_since, row.held_by_open_transaction) == (None, None, None)

    # The persist batch's next ledger row lands in the upgraded table.
    new_row = {name: None for name, _ in LEDGER_COLUMNS} | {
        "stream": "telemetry",
        "step_id": 1,
        "source_partition": 3,
        "start_offset": 10,
        "end_offset": 14,
        "records": 3,
        "data_records": 3,
        "held_by_open_transaction": False,
    }
    frame = spark.createDataFrame([tuple(new_row[n] for n, _ in LEDGER_COLUMNS)], ddl(LEDGER_COLUMNS))
    tables.append(frame, "ledger", "tidemark:test")
    appended = tables.read("ledger").where("step_id = 1").first()
    assert (appended.end_offset, appended.data_records, appended.held_by_open_transaction) == (14, 3, False)
    assert {t: tables.read(t).count() for t in ("events", "late")} == dict.fromkeys(("events", "late"), 0), (
        "the tables that did not exist yet are created empty"
    )
    quarantine = tables.read("quarantine")
    assert [f.name for f in quarantine.schema.fields] == [n for n, _ in QUARANTINE_COLUMNS], "headers after the key"
    (kept,) = quarantine.collect()
    assert (kept.source_offset, bytes(kept.raw_value), kept.record_headers) == (5, b"{", None)


def test_the_last_live_global_watermark_is_the_largest_a_live_ledger_row_holds(spark, tmp_path):
    from datetime import datetime

    stream = load_stream(
        REPO / "conf" / "streams.yaml",
        "telemetry",
        {"TIDEMARK_LAKE_ROOT": str(tmp_path / "lake"), "TIDEMARK_CHECKPOINT_ROOT": str(tmp_path / "checkpoints")},
    )
    tables = LakeTables(spark, stream)
    tables.ensure()
    assert tables.last_live_global_watermark_ms() is None, "no batch yet: no G"

    def row(mode: str, g_ms: int | None):
        g = None if g_ms is None else datetime.fromtimestamp(g_ms / 1000, tz=UTC)
        values = {name: None for name, _ in LEDGER_COLUMNS} | {
            "stream": "telemetry",
            "mode": mode,
            "global_watermark": g,
        }
        return tuple(values[n] for n, _ in LEDGER_COLUMNS)

    rows = [row("live", 1_000_000), row("live", 2_000_000), row("live", None), row("recovery", 9_000_000)]
    tables.append(spark.createDataFrame(rows, ddl(LEDGER_COLUMNS)), "ledger", "tidemark:test")

    assert tables.last_live_global_watermark_ms() == 2_000_000, "live's G, not a recovery's pinned one"


TABLES = ("events", "late", "quarantine", "ledger", "seals", "claims")


@pytest.mark.parametrize("store", ["local", "s3"])
def test_a_folder_without_a_first_commit_is_no_table_to_any_reader_and_the_tables_are_made_over_it(
    store, spark, tmp_path, request
):
    """What a creator leaves half-way, or dead: the table's folder, an empty ``_delta_log``, a
    temporary commit file (on S3: the objects under the prefix, a folder marker among them)."""
    from connectors.lake_reader import last_global_watermark_ms, last_sealed_hour_ms
    from connectors.lake_storage import is_delta_table
    from connectors.persist_look import read_ledger_standing
    from expectations.delta_log import DeltaLogFiles
    from expectations.lake_snapshot import LakeSnapshot
    from expectations.quality_tables import QualityTablesMissingError

    if store == "s3":
        loopback_s3 = request.getfixturevalue("spark_on_loopback_s3")
        environment = loopback_s3.lake_environment(f"half-made-{tmp_path.name}")
        filesystem = loopback_s3.filesystem()

        def leave(path: str, name: str) -> None:
            log = f"{path.split('://', 1)[1]}/_delta_log"
            if not name:
                filesystem.create_dir(log)  # a folder marker: an empty object named "<log>/"
                return
            with filesystem.open_output_stream(f"{log}/{name}") as out:
                out.write(b"{}")

    else:
        environment = {"TIDEMARK_LAKE_ROOT": str(tmp_path / "lake"), "TIDEMARK_CHECKPOINT_ROOT": str(tmp_path / "ck")}

        def leave(path: str, name: str) -> None:
            (Path(path) / "_delta_log").mkdir(parents=True, exist_ok=True)
            if not name.endswith("/"):
                (Path(path) / "_delta_log" / name).write_text("{}")

    stream = load_stream(REPO / "conf" / "streams.yaml", "telemetry", environment)
    tables = LakeTables(spark, stream)
    for table in TABLES:
        leave(tables.path(table), "_staged_commits/" if store == "local" else "")
        leave(tables.path(table), ".00000000000000000000.json.a1b2.tmp")

    with pytest.MonkeyPatch.context() as patch:  # the Spark-free readers take the lake's settings from here
        for name, value in environment.items():
            patch.setenv(name, value)
        assert [table for table in TABLES if tables.exists(table) or is_delta_table(tables.path(table))] == []
        assert read_ledger_standing(stream).partitions == {}, "the persist look: no ledger yet"
        assert (last_global_watermark_ms(stream), last_sealed_hour_ms(stream)) == (None, None)
        assert DeltaLogFiles(tables.path("events")).versions() == [], "the damage scan: no commit to read"
        with pytest.raises(QualityTablesMissingError, match="the events table does not exist"):
            LakeSnapshot(stream).require()

        assert tables.ensure() == set(TABLES), "every table made, over what was left"
        assert [table for table in TABLES if not (tables.exists(table) and is_delta_table(tables.path(table)))] == []
        assert read_ledger_standing(stream).partitions == {}, "an empty ledger now, read as one"
