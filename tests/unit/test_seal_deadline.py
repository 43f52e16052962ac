"""The seal deadline reads the newest seal from a real (deltalake-written) lake and names exactly
the hours whose end plus ``alerts.unsealed_hour_after`` has passed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import yaml

from tidemark.stream_config import load_streams
from tidemark.table_schemas import LEDGER_COLUMNS, SEALS_COLUMNS
from tidemark_airflow.seal_deadline import seal_deadline_figures

REPO = Path(__file__).resolve().parents[2]
HOUR = 3_600_000
_TYPES = {
    "STRING": pa.string(),
    "BIGINT": pa.int64(),
    "INT": pa.int32(),
    "TIMESTAMP": pa.timestamp("us", tz="UTC"),
    "BOOLEAN": pa.bool_(),
}


def _stream(tmp_path):
    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    document["streams"]["telemetry"]["alerts"] = {"webhook": {"conn_id": "hook"}, "unsealed_hour_after": "30m"}
    (tmp_path / "streams.yaml").write_text(yaml.safe_dump(document))
    environ = {"TIDEMARK_LAKE_ROOT": str(tmp_path / "lake"), "TIDEMARK_CHECKPOINT_ROOT": str(tmp_path / "checkpoints")}
    return load_streams(tmp_path / "streams.yaml", environ)["telemetry"]


def _write(path: Path, columns, rows) -> None:
    from deltalake import write_deltalake

    schema = pa.schema([(name, _TYPES[sql_type]) for name, sql_type in columns])
    write_deltalake(str(path), pa.Table.from_pylist([dict(zip(schema.names, row)) for row in rows], schema=schema))


def _at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def test_hours_after_the_newest_seal_are_overdue_once_their_end_and_the_bound_passed(tmp_path):
    stream = _stream(tmp_path)
    lake = tmp_path / "lake" / "telemetry"
    _write(lake / "ledger", LEDGER_COLUMNS, [])
    day = 20_000 * 24 * HOUR
    _write(
        lake / "seals",
        SEALS_COLUMNS,
        [
            ("telemetry", _at(day + h * HOUR), _at(day + (h + 2) * HOUR), _at(day + (h + 1) * HOUR + 600_000), h)
            for h in (8, 9, 10)
        ],
    )
    # Newest seal: hour 10. Hour 11 ends at 12:00, due at 12:30; hour 12 due at 13:30.
    now = day + 13 * HOUR + 29 * 60_000
    assert seal_deadline_figures(stream, now) == {
        "newest_sealed_ms": day + 10 * HOUR,
        "overdue_ms": [day + 11 * HOUR],
        "bound_ms": 1_800_000,
        "now_ms": now,
    }
    assert seal_deadline_figures(stream, day + 12 * HOUR + 29 * 60_000)["overdue_ms"] == []


def test_a_lake_the_persist_job_never_wrote_has_nothing_overdue(tmp_path):
    assert seal_deadline_figures(_stream(tmp_path), 10**13)["overdue_ms"] == []
