"""The quality run's Spark-free readers on S3 (the loopback s3proxy, signatures checked): the
tables written by deltalake under an s3a:// lake root, read with the same storage settings as
Spark's and delta-rs's (connectors.lake_storage): one hour's files, the ledger, and the Delta
log's commit files and Parquet footers the damage scan reads. No Spark.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

from connectors.lake_storage import delta_rs_uri, storage_options
from expectations.delta_lake_facts import DeltaLakeFacts
from expectations.delta_log import DeltaLogFiles, file_row_counts, missing_files
from tidemark.stream_config import load_stream

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
HOUR = 3_600_000
H = 1_795_309_200_000  # 2026-11-22T01:00:00Z
TS = pa.timestamp("us", tz="UTC")


def _at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def test_one_hours_facts_and_the_delta_log_read_from_s3_without_spark(loopback_s3, tmp_path, monkeypatch):
    from deltalake import write_deltalake

    for name, value in loopback_s3.lake_environment("quality-facts").items():
        monkeypatch.setenv(name, value)
    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    document["streams"] = {"telemetry": document["streams"]["telemetry"]}
    (tmp_path / "streams.yaml").write_text(yaml.safe_dump(document))
    stream = load_stream(tmp_path / "streams.yaml", "telemetry")
    assert stream.table_path("events").startswith("s3a://")

    def write(table: str, rows: dict, partition_by=None) -> None:
        path = stream.table_path(table)
        write_deltalake(
            delta_rs_uri(path),
            pa.table(rows),
            mode="append",
            partition_by=partition_by,
            storage_options=storage_options(path),
        )

    def records(table: str, times: list[int], offsets: range) -> None:
        rows = {
            "source_partition": pa.array([0] * len(times), pa.int32()),
            "source_offset": pa.array(list(offsets), pa.int64()),
            "event_time": pa.array([_at(t) for t in times], TS),
        }
        if table == "events":
            rows |= {
                "event_date": pa.array([_at(t).date() for t in times], pa.date32()),
                "event_hour": pa.array([_at(t).hour for t in times], pa.int32()),
            }
        write(table, rows, ["event_date", "event_hour"] if table == "events" else None)

    records("events", [H + i * 60_000 for i in range(30)], range(0, 30))  # hour H
    records("events", [H + HOUR + i * 60_000 for i in range(20)], range(30, 50))  # the next hour
    records("late", [H + 5], range(50, 51))
    records("quarantine", [], range(0))
    ledger_times = {
        column: pa.array([_at(H)], TS)
        for column in ("min_event_time", "max_event_time", "partition_watermark", "global_watermark", "read_time")
    }
    ledger = {"step_id": [1], "source_partition": pa.array([0], pa.int32()), "mode": ["live"], "start_offset": [0]}
    ledger |= {"end_offset": [51], "log_end_offset": [51], "records": [50], "late": [1], "quarantined": [0]}
    write("ledger", {**ledger, "data_records": [51], **ledger_times, "partition_status": ["ACTIVE"]})
    write("seals", {"hour": pa.array([_at(H)], TS), "sealed_at": pa.array([_at(H + 2 * HOUR)], TS)})

    facts = DeltaLakeFacts(stream)
    facts.require()
    assert [(e.start, e.end, e.data_records) for e in facts.ledger()] == [(0, 51, 51)]
    assert facts.seals() == {H: H + 2 * HOUR}
    counts = facts.count_by_hour([H])
    assert (counts[(0, H)].events, counts[(0, H)].late) == (30, 1)
    assert facts.files_read == {"events": 1, "late": 1}, "the next hour's events file is not read"

    log = DeltaLogFiles(stream.table_path("events"))
    assert log.versions() == [0, 1]
    added = [line for line in log.read(1).splitlines() if '"add"' in line]
    assert len(added) == 1 and "event_hour=2" in added[0]
    (path,) = log.existing([p for p in _snapshot_paths(stream) if "event_hour=1/" in p])
    assert file_row_counts(log, [path]) == {path: 30}
    assert missing_files(stream, "events") == [], "every file the snapshot names is there"


def _snapshot_paths(stream) -> list[str]:
    """The events table's files as its snapshot names them (relative to the table)."""
    from connectors.lake_storage import open_delta_table

    return pa.table(open_delta_table(stream.table_path("events")).get_add_actions()).column("path").to_pylist()
