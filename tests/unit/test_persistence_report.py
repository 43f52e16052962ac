"""The persistence report without Spark (connectors.persistence_figures, tidemark_cli.persistence_report)
over a lake written here with deltalake, in the tables' own shapes (the events table partitioned
by event date and hour), and a log whose bounds the test gives: for Kafka a stand-in answering
``bounds_now``, for Kinesis the real connectors.kinesis_log.KinesisLog over an in-memory Kinesis.

Every expected figure is stated from the rows written and the bounds given, never computed by
the code under test. Offsets without data (transaction markers), a ledger row written before
``data_records`` existed, an empty batch, a recovery's rows (read again: not counted twice), a
partition the job never read, a FINISHED, a closed, a gone and a never-read shard are among them.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, date, datetime

import pyarrow as pa
import pytest
import yaml
from deltalake import write_deltalake

from connectors.kafka_log import LogBounds
from connectors.kinesis_log import KinesisLog
from connectors.persistence_figures import read_lake_figures, read_report_rows
from expectations.quality_result import QualityRunResult
from expectations.quality_summary import summary_folder, write_summary
from harness.cli_environment import cli_home  # noqa: F401 (fixture)
from harness.fake_kinesis import FakeKinesis, SecondsClock
from harness.shipped_stream import REPO, shipped_stream
from stack.ports import free_port
from tidemark.log_position import KINESIS_SEQUENCE_NUMBERS, position_key
from tidemark.partitioned_log import LogUnreachableError
from tidemark.stream_config import load_stream
from tidemark.table_schemas import LEDGER_COLUMNS, ledger_columns
from tidemark_cli.command_failed import CommandFailed
from tidemark_cli.commands import main
from tidemark_cli.persistence_report import print_persistence_report

T0 = 1_795_309_200_000  # 2026-11-22T01:00:00Z
HOUR = 3_600_000
TS = pa.timestamp("us", tz="UTC")
SQL_TYPES = {"STRING": pa.string(), "BIGINT": pa.int64(), "INT": pa.int32(), "TIMESTAMP": TS, "BOOLEAN": pa.bool_()}


class KafkaBounds:
    """The Kafka log as the report asks it: every partition's bounds now (ListOffsets)."""

    def __init__(self, bounds: dict[int, LogBounds]):
        self.bounds = bounds
        self.asked = 0

    def bounds_now(self, positions, finished, check_retention):
        self.asked += 1
        return self.bounds


def _time(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def _write_ledger(path, stream_name: str, rows: list[dict], columns=LEDGER_COLUMNS) -> None:
    schema = pa.schema([(name, SQL_TYPES[sql_type]) for name, sql_type in columns])
    filled = [{"stream": stream_name, "read_time": _time(T0 + row["step_id"] * 1000), **row} for row in rows]
    write_deltalake(str(path), pa.Table.from_pylist(filled, schema=schema), mode="append")


def _ledger_row(step, partition, start, end, data_records, records, late=0, quarantined=0, **others) -> dict:
    return {
        "step_id": step,
        "source_partition": partition,
        "mode": "live",
        "start_offset": start,
        "end_offset": end,
        "data_records": data_records,
        "records": records,
        "late": late,
        "quarantined": quarantined,
        "partition_status": "ACTIVE",
        **others,
    }


def _write_records(stream, table: str, per_partition: dict[int, int]) -> None:
    """``per_partition`` rows in ``table``; events over two event hours, partitioned as Spark writes it."""
    partitions = [p for p, n in per_partition.items() for _ in range(n)]
    columns = {"source_partition": pa.array(partitions, pa.int32()), "source_offset": pa.array(range(len(partitions)))}
    partition_by = None
    if table == "events":
        columns["event_date"] = pa.array([date(2026, 11, 22)] * len(partitions), pa.date32())
        columns["event_hour"] = pa.array([1 + i % 2 for i in range(len(partitions))], pa.int32())
        partition_by = ["event_date", "event_hour"]
    write_deltalake(stream.table_path(table), pa.table(columns), partition_by=partition_by, mode="append")


def _write_seals(stream, hours_ms: list[int]) -> None:
    hours = pa.array([_time(ms) for ms in hours_ms], TS)
    write_deltalake(stream.table_path("seals"), pa.table({"stream": [stream.name] * len(hours), "hour": hours}))


@pytest.fixture
def kafka_lake(tmp_path):
    """Partition 0: 100 offsets with 4 markers, then 50 offsets written before data_records was
    kept, an empty batch, and a recovery that read the first 100 again; partition 1: 30 offsets of
    a transactional producer, 10 of them markers. Events 135 + 20, late 4, quarantined 7; 3 sealed hours."""
    stream = shipped_stream(tmp_path)
    _write_ledger(
        stream.table_path("ledger"),
        stream.name,
        [
            _ledger_row(1, 0, 0, 100, data_records=96, records=90, late=4, quarantined=2),
            _ledger_row(2, 0, 100, 150, data_records=None, records=45, quarantined=5),
            _ledger_row(3, 0, 150, 150, data_records=0, records=0, partition_status="IDLE"),
            _ledger_row(1, 0, 0, 100, data_records=96, records=0, mode="recovery"),
            _ledger_row(1, 1, 0, 30, data_records=20, records=20),
        ],
    )
    _write_records(stream, "events", {0: 135, 1: 20})
    _write_records(stream, "late", {0: 4})
    _write_records(stream, "quarantine", {0: 7})
    _write_seals(stream, [T0, T0 + HOUR, T0 + 2 * HOUR])
    return stream


def test_the_lake_figures_are_the_tables_rows_and_the_live_ranges(kafka_lake):
    lake = read_lake_figures(kafka_lake)

    assert (lake.persisted, lake.late, lake.quarantined) == ({0: 135, 1: 20}, {0: 4}, {0: 7})
    assert lake.positions == {0: 150, 1: 30}
    # 100 - 96 and 50 - (45 + 0 + 5) on partition 0, 30 - 20 on 1; the recovery's row not again.
    assert lake.without_data == {0: 4, 1: 10} and lake.read == {0: 146, 1: 20}
    assert (lake.sealed_hours, lake.latest_sealed_hour_ms) == (3, T0 + 2 * HOUR)


def test_the_kafka_report_prints_each_partition_against_the_log_and_writes_the_same_figures(
    kafka_lake, tmp_path, capsys
):
    log = KafkaBounds({0: LogBounds(0, 160, 160), 1: LogBounds(0, 30, 30), 2: LogBounds(5, 12, 12)})
    json_file = tmp_path / "reports" / "persist_telemetry.json"

    print_persistence_report(kafka_lake, json_file, log)

    assert capsys.readouterr().out.splitlines() == [
        "stream telemetry (topic telemetry)",
        "partition   offsets no record  persisted   late quarantined not yet read",
        "------------------------------------------------------------------------",
        "        0       160         4        135      4           7           10",
        "        1        30        10         20      0           0            0",
        "        2         7         0          0      0           0            7",
        "------------------------------------------------------------------------",
        "    total       197        14        155      4           7           17",
        "offsets are not records: 'no record' counts commit and abort markers, aborted transactions and "
        "compacted offsets the job read past",
        "sealed hours: 3, the latest [2026-11-22 03:00, +1h) UTC",
    ]
    assert log.asked == 1
    figures = json.loads(json_file.read_text())
    assert figures[0] == {
        "partition": 0,
        "log_earliest": 0,
        "log_end": 160,
        "ledger_position": 150,
        "without_data": 4,
        "persisted": 135,
        "late": 4,
        "quarantined": 7,
        "in_log": 160,
        "lag": 10,
    }
    # A partition the job never read stands at the log's earliest offset: all of it unread.
    assert [(f["partition"], f["ledger_position"], f["in_log"], f["lag"]) for f in figures[1:]] == [
        (1, 30, 30, 0),
        (2, 5, 7, 7),
    ]


def test_a_broker_that_is_down_is_one_line_naming_it_at_once(tmp_path, monkeypatch):
    port = free_port()
    monkeypatch.setenv("TIDEMARK_KAFKA_BOOTSTRAP", f"127.0.0.1:{port}")
    stream = shipped_stream(tmp_path)
    _write_ledger(stream.table_path("ledger"), stream.name, [_ledger_row(1, 0, 0, 10, data_records=10, records=10)])

    with pytest.raises(CommandFailed) as failed:
        print_persistence_report(stream)

    assert str(failed.value) == (
        f"the persistence report asks the Kafka topic `telemetry` (4 partitions) at 127.0.0.1:{port} where it stands, "
        f"and it did not answer (ConnectionError: no server of 127.0.0.1:{port} accepts connections). Is it up? "
        "`tidemark up` starts the embedded stack."
    )


def test_the_report_command_adds_it_and_a_log_that_is_down_is_its_error_line(cli_home, capsys):
    folder = summary_folder(cli_home / "reports", "telemetry", "manual__1")
    write_summary(
        QualityRunResult(
            **{"stream": "telemetry", "run_name": "manual__1", "now_ms": T0, "hours_ms": (T0 - HOUR,)},
            **{"partitions": (), "hours": (), "checks": (), "recovery_requests": (), "hour_reports": ()},
            summary_json=str(folder / "summary.json"),
            summary_html=str(folder / "summary.html"),
            data_docs_index=str(cli_home / "reports" / "telemetry" / "gx" / "index.html"),
            seconds=1.0,
            stage_seconds=(),
        )
    )
    ledger = cli_home / "lake" / "telemetry" / "ledger"
    _write_ledger(ledger, "telemetry", [_ledger_row(1, 0, 0, 10, data_records=10, records=10)])

    assert main(["report", "telemetry", "--persistence"]) == 1

    bootstrap = f"127.0.0.1:{os.environ['TIDEMARK_KAFKA_PORT']}"
    error = capsys.readouterr().err
    assert error.startswith(
        f"error: the persistence report asks the Kafka topic `telemetry` (4 partitions) at {bootstrap}"
    )
    assert error.count("\n") == 1 and "Traceback" not in error


def test_a_stream_without_a_ledger_says_what_to_run(tmp_path):
    stream = shipped_stream(tmp_path)

    with pytest.raises(CommandFailed, match=r"has no ledger at .*run the tidemark_persist__telemetry DAG"):
        print_persistence_report(stream, log=KafkaBounds({}))


# -- Kinesis ---------------------------------------------------------------------------------------


def _rides(tmp_path):
    """The shipped Kinesis stream, its lake under ``tmp_path``."""
    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    rides = {**document["streams"]["rides"], "lake": {"root": str(tmp_path / "lake"), "checkpoint_root": str(tmp_path)}}
    (tmp_path / "streams.yaml").write_text(yaml.safe_dump({**document, "streams": {"rides": rides}}))
    return load_stream(tmp_path / "streams.yaml", "rides")


@pytest.fixture
def kinesis(tmp_path):
    """Shard 0 closed and FINISHED in the ledger; 1 open, the lake one record in of three; 2 open,
    read to its tip; 3 listed, never read; 4 read, then gone from the listing."""
    clock = SecondsClock(T0 / 1000 + 600)
    service = FakeKinesis("rides", clock)
    for number in range(4):
        service.add_shard(number)
    zero = service.put(0, T0, T0 + 500)
    service.close(0)
    one = service.put(1, T0, T0 + 1_000, T0 + 5_000)
    two = service.put(2, T0 + 2_000, T0 + 3_000)
    service.put(3, T0)
    gone_end = 10**50  # a 51-digit sequence number: no long holds it

    stream = _rides(tmp_path)

    def row(step, partition, start, end, data_records, status="ACTIVE"):
        keys = position_key(start), position_key(end)
        return _ledger_row(step, partition, *keys, data_records, data_records, partition_status=status)

    def first(number):
        return service.shards[f"shardId-{number:012d}"].starting

    _write_ledger(
        stream.table_path("ledger"),
        stream.name,
        [
            row(1, 0, first(0), zero[1] + 1, 2, status="FINISHED"),
            row(1, 1, first(1), one[0] + 1, 1),
            row(1, 2, first(2), two[0] + 1, 1),
            row(2, 2, two[0] + 1, two[1] + 1, 1),
            row(1, 4, gone_end - 3 * 10**30, gone_end, 3),
        ],
        ledger_columns(KINESIS_SEQUENCE_NUMBERS),
    )
    _write_records(stream, "events", {0: 2, 1: 1, 2: 1, 4: 3})
    _write_records(stream, "quarantine", {2: 1})
    log = KinesisLog("rides", "us-east-1", "http://127.0.0.1:9", client=service, clock=clock, sleep=clock.sleep)
    yield stream, service, log
    log.close()


def test_the_kinesis_report_gives_each_shards_state_records_and_how_far_behind_its_tip(kinesis, tmp_path, capsys):
    stream, _, log = kinesis
    json_file = tmp_path / "persist_rides.json"

    print_persistence_report(stream, json_file, log)

    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"stream rides ({stream.source.description})"
    assert lines[3:9] == [
        "  shardId-000000000000 FINISHED        2          2      0           0           ",
        "  shardId-000000000001     open        1          1      0           0      4.0 s",
        "  shardId-000000000002     open        2          1      0           1      0.0 s",
        "  shardId-000000000003     open        0          0      0           0           ",
        "  shardId-000000000004     gone        3          3      0           0           ",
        "-" * 81,
    ]
    assert lines[9:] == [
        "                 total                 8          7      0           1           ",
        "read = persisted + late + quarantined; 'behind' is Kinesis's MillisBehindLatest at the lake's position",
        "sealed hours: none yet",
    ]
    assert json.loads(json_file.read_text())[1] == {
        "partition": 1,
        "shard_id": "shardId-000000000001",
        "state": "open",
        "read": 1,
        "persisted": 1,
        "late": 0,
        "quarantined": 0,
        "millis_behind_latest": 4_000,
    }


def test_a_closed_shard_the_ledger_has_not_finished_is_asked_and_said_closed(kinesis):
    stream, service, log = kinesis
    service.close(1)

    reports = read_report_rows(stream, read_lake_figures(stream), log)

    assert [(r.state, r.millis_behind_latest) for r in reports[:2]] == [("FINISHED", None), ("closed", 4_000)]
    asked = {call[1] for call in service.calls if call[0] == "GetShardIterator"}
    assert asked == {"shardId-000000000001", "shardId-000000000002"}  # never the FINISHED, unread or gone


def test_a_kinesis_endpoint_that_does_not_answer_is_one_line_naming_the_stream(kinesis):
    stream, service, log = kinesis
    service.unreachable = True

    with pytest.raises(
        LogUnreachableError, match=r"^the persistence report asks the Kinesis stream `rides` .*Is it up"
    ):
        read_report_rows(stream, read_lake_figures(stream), log)
