"""`tidemark status`: a table per partition with its status in colour, from the stream overview
(tidemark.stream_overview) of a generated ledger history with one stalled and one idle partition
(generator.ledger_history); and the command end to end over a ledger written as a Delta table and
read back by connectors.lake_reader with deltalake."""

from __future__ import annotations

import time

import pyarrow as pa
from rich.console import Console

from generator.ledger_history import LedgerHistory
from harness.cli_environment import cli_home  # noqa: F401 (fixture)
from tidemark.event_time_text import format_event_time
from tidemark.stall_rules import StallRules
from tidemark.stream_overview import LedgerPoint, PartitionTotals, build_stream_overview
from tidemark.table_schemas import LEDGER_COLUMNS
from tidemark_cli.commands import main
from tidemark_cli.status_colours import STATUS_STYLES
from tidemark_cli.stream_status import print_status, status_table

MINUTE = 60_000
HOUR = 60 * MINUTE
START = 1_795_000_000_000 - (1_795_000_000_000 % HOUR)
RETENTION = 7 * 24 * HOUR
BATCHES, BATCHES_BEFORE_STALL = 6 * 12, 4 * 12  # 5-minute batches over 6 hours, the stall after 4


def _history(start_ms: int) -> LedgerHistory:
    return LedgerHistory(
        "telemetry",
        partitions=4,
        start_ms=start_ms,
        end_ms=start_ms + 6 * HOUR,
        stalled_partition=2,
        stalled_since_ms=start_ms + 4 * HOUR,
        idle_partition=3,
    )


def _overview():
    points = [
        LedgerPoint(
            r[2],
            int(r[17].timestamp() * 1000),
            r[5],
            r[6],
            int(r[13].timestamp() * 1000),
            int(r[14].timestamp() * 1000),
            r[15],
        )
        for r in _history(START).rows()
    ]
    return build_stream_overview(
        "telemetry",
        points,
        {2: PartitionTotals(late=7, quarantined=3)},
        range(4),
        StallRules(window=6, stall_timeout_ms=30 * MINUTE, max_partition_lag_ms=HOUR),
        RETENTION,
        START + 6 * HOUR,
        last_sealed_hour_ms=START + 2 * HOUR,
        log_ends={0: 21_600, 1: 21_600, 2: 21_600, 3: 300},
        oldest_unread_ms={2: START + 4 * HOUR - 6 * MINUTE},
    )


def _rows(text: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in text.splitlines() if line.split() and line.split()[0] in "0123"}


def test_one_row_per_partition_with_position_lag_watermark_and_retention_deadline():
    console = Console(record=True, width=160)

    print_status(console, _overview())

    text = console.export_text()
    stalled_at = 300 * BATCHES_BEFORE_STALL
    stalled_watermark = START + (BATCHES_BEFORE_STALL - 1) * 5 * MINUTE - MINUTE - 30_000 - 1
    deadline = format_event_time(START + 4 * HOUR - 6 * MINUTE + RETENTION).replace("T", " ")[:16]
    assert text.splitlines()[0] == (
        f"Stream telemetry: global watermark G {format_event_time(stalled_watermark).replace('T', ' ')[:19]}, "
        f"last sealed hour {format_event_time(START + 2 * HOUR).replace('T', ' ')[:16]}, "
        f"as of {format_event_time(START + 6 * HOUR).replace('T', ' ')[:19]} (UTC)"
    )
    rows = _rows(text)
    watermark = format_event_time(stalled_watermark).replace("T", " ")[:19].split()
    assert rows["2"] == [
        "2",
        "STOP",
        f"{stalled_at:,}",
        "21,600",
        f"{21_600 - stalled_at:,}",
        *watermark,
        *deadline.split(),
        "7",
        "3",
    ]
    assert rows["3"][:5] == ["3", "IDLE", "300", "300", "0"] and rows["3"][7:] == ["nothing", "unread", "0", "0"]
    assert [rows[p][1] for p in "01"] == ["ACTIVE", "ACTIVE"]
    attention = [line for line in text.splitlines() if line.startswith("partition ")]
    assert len(attention) == 1 and attention[0].startswith("partition 2 STOP: ")


def test_each_status_cell_carries_its_colour():
    table = status_table(_overview())
    statuses = list(table.columns[1].cells)

    assert [(cell.plain, cell.style) for cell in statuses] == [
        ("ACTIVE", STATUS_STYLES["ACTIVE"]),
        ("ACTIVE", STATUS_STYLES["ACTIVE"]),
        ("STOP", "bold white on red"),
        ("IDLE", STATUS_STYLES["IDLE"]),
    ]


def test_an_80_column_terminal_gets_every_column():
    console = Console(record=True, width=80)

    print_status(console, _overview())

    text = console.export_text()
    assert max(len(line.rstrip()) for line in text.splitlines() if line.startswith(" ")) <= 80
    assert "quarantined" in text and _rows(text)["2"][:2] == ["2", "STOP"]


def _write_ledger(path, rows) -> None:
    from deltalake import write_deltalake

    types = {
        "STRING": pa.string(),
        "BIGINT": pa.int64(),
        "INT": pa.int32(),
        "TIMESTAMP": pa.timestamp("us", tz="UTC"),
        "BOOLEAN": pa.bool_(),
    }
    schema = pa.schema([(name, types[sql_type]) for name, sql_type in LEDGER_COLUMNS])
    write_deltalake(str(path), pa.Table.from_pylist([dict(zip(schema.names, row)) for row in rows], schema=schema))


def test_status_reads_the_lake_and_says_when_the_log_does_not_answer(cli_home, capsys):
    now = int(time.time() * 1000)
    _write_ledger(cli_home / "lake" / "telemetry" / "ledger", _history(now - now % (5 * MINUTE) - 6 * HOUR).rows())

    assert main(["status", "telemetry"]) == 0

    out = capsys.readouterr().out
    rows = _rows(out)
    assert [rows[p][1] for p in "0123"] == ["ACTIVE", "ACTIVE", "STOP", "IDLE"]
    stalled_at = 300 * BATCHES_BEFORE_STALL
    assert rows["2"][2:5] == [f"{stalled_at:,}", f"{300 * BATCHES:,}", f"{300 * (BATCHES - stalled_at // 300):,}"]
    assert "Is Kafka up? Start it with `tidemark up`." in out


def test_status_of_a_stream_the_persist_job_never_wrote_says_what_to_run(cli_home, capsys):
    assert main(["status", "telemetry"]) == 1
    assert (
        f"error: stream 'telemetry' has no ledger at {cli_home / 'lake' / 'telemetry' / 'ledger'}: the persist job has not "
        "written to this lake yet (run the tidemark_persist__telemetry DAG, or check lake.root)"
    ) in capsys.readouterr().err


def test_an_accepted_loss_is_shown_with_who_and_when_on_the_status_and_the_page():
    import dataclasses

    from tidemark.accepted_loss import AcceptedLoss
    from tidemark_airflow.quality_reports import StreamReports
    from tidemark_airflow.watermark_page_html import stream_page

    overview = _overview()
    accepted = AcceptedLoss(1, 40, 70, "alice", START)
    rebuilt = build_stream_overview(
        "telemetry",
        [],
        {},
        range(2),
        StallRules(window=6, stall_timeout_ms=30 * MINUTE, max_partition_lag_ms=HOUR),
        RETENTION,
        START,
        accepted_lost=[accepted, AcceptedLoss(5, 0, 9, "bob", START)],
    )
    assert [p.accepted_lost for p in rebuilt.partitions] == [(), (accepted,)]
    overview = dataclasses.replace(
        overview,
        partitions=tuple(
            dataclasses.replace(p, accepted_lost=(accepted,) if p.partition == 1 else ()) for p in overview.partitions
        ),
    )
    said = f"partition 1: positions [40, 70) accepted as lost by alice at {format_event_time(START)}"
    console = Console(record=True, width=160)
    print_status(console, overview)
    assert said in console.export_text()
    html = stream_page(overview, StreamReports((), (), None), "/tidemark")
    assert 'id="accepted-losses"' in html and said in html
