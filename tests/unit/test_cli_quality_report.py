"""`tidemark report`: the newest quality run's summary, as the quality run writes it
(expectations.quality_summary, the real writer), shown as tables with each status in its colour."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from rich.console import Console

from expectations.quality_result import CheckSummary, PartitionQuality, QualityRunResult
from expectations.quality_status import QualityStatus
from expectations.quality_summary import summary_folder, write_summary
from harness.cli_environment import cli_home  # noqa: F401 (fixture)
from tidemark.offset_coverage import OffsetRange
from tidemark.recovery_request import RecoveryRequest
from tidemark.stream_glance import NOT_CHECKED
from tidemark.stream_overview import NO_LEDGER
from tidemark_cli.command_failed import CommandFailed
from tidemark_cli.commands import main
from tidemark_cli.quality_report import latest_summary, print_summary, read_summary
from tidemark_cli.status_colours import STATUS_STYLES, status_text

HOUR_MS = 1_795_338_000_000  # 2026-11-22T09:00:00Z
STOPPED = "read position 1200 has not moved for 45m while the log end moved to 1800"


def _partition(partition: int, status: QualityStatus, reason: str, holes=(), lag=0) -> PartitionQuality:
    return PartitionQuality(
        partition=partition,
        status=status,
        records=1000 + partition,
        late=partition,
        quarantined=2 * partition,
        position=5000,
        log_earliest=0,
        log_end=5000 + lag,
        lag=lag,
        partition_watermark_ms=HOUR_MS + 59 * 60_000,
        holes=tuple(holes),
        hole_ranges=(),
        lost=(),
        failed_checks=(),
        reason=reason,
        reasons=(reason,),
    )


def _write_run(reports: Path, run_name: str, partitions, checks, requests=()) -> Path:
    folder = summary_folder(reports, "telemetry", run_name)
    docs = reports / "telemetry" / "gx" / "index.html"
    write_summary(
        QualityRunResult(
            stream="telemetry",
            run_name=run_name,
            now_ms=HOUR_MS + 3_600_000,
            hours_ms=(HOUR_MS,),
            partitions=tuple(partitions),
            hours=(),
            checks=tuple(checks),
            recovery_requests=tuple(requests),
            summary_json=str(folder / "summary.json"),
            summary_html=str(folder / "summary.html"),
            data_docs_index=str(docs),
            hour_reports=(),
            seconds=1.0,
            stage_seconds=(),
        )
    )
    return folder / "summary.json"


def _check(name: str, success: bool, failed=()) -> CheckSummary:
    return CheckSummary(name, True, success, 4, tuple(failed), (), 0.1, 0.2)


@pytest.fixture
def two_runs(tmp_path):
    reports = tmp_path / "reports"
    older = _write_run(reports, "scheduled__older", [_partition(0, QualityStatus.OK, "ok")], [_check("stall", True)])
    newer = _write_run(
        reports,
        "scheduled__newer",
        [
            _partition(0, QualityStatus.OK, "read up to offset 5000 with a lag of 0 offsets"),
            _partition(1, QualityStatus.STOP, STOPPED, holes=[OffsetRange(1200, 1800)], lag=600),
        ],
        [_check("completeness", False, ["ledger_ranges_contiguous"]), _check("stall", False, ["stall_status"])],
        [RecoveryRequest("telemetry", 1, (OffsetRange(1200, 1800),), STOPPED)],
    )
    os.utime(older, (1_000, 1_000))
    os.utime(newer, (2_000, 2_000))
    return reports, newer


def test_the_newest_run_is_shown_with_each_partition_its_status_and_where_the_html_is(two_runs):
    reports, newer = two_runs
    console = Console(record=True, width=200)

    path = latest_summary(reports, "telemetry")
    print_summary(console, read_summary(path), path)

    lines = [line.rstrip() for line in console.export_text().splitlines()]
    assert lines[0] == (
        "Quality of stream telemetry, run scheduled__newer at 2026-11-22T10:00:00.000Z: checks failed: completeness, stall"
    )
    rows = {line.split()[0]: line.split() for line in lines if line.split() and line.split()[0] in ("0", "1")}
    assert rows["0"] == ["0", "OK", "2026-11-22", "09:59:00", "0", "1,000", "0", "0"]
    assert rows["1"] == ["1", "STOP", "2026-11-22", "09:59:00", "600", "1,001", "1", "2", "1200-1800"]
    assert f"partition 1 STOP: {STOPPED}" in lines
    assert f"  partition 1: offsets 1200-1800: {STOPPED}" in lines
    assert f"HTML summary: {newer.with_suffix('.html')}" in lines
    assert f"Data Docs:    {reports / 'telemetry' / 'gx' / 'index.html'}" in lines


def test_a_status_has_the_same_colour_wherever_it_is_shown():
    assert status_text("STOP").style == "bold white on red"
    assert status_text("ok").style == STATUS_STYLES["OK"] == "bold green"
    assert status_text("SOMETHING_NEW").style == "" and status_text("SOMETHING_NEW").plain == "SOMETHING_NEW"
    # Every quality status, both reader statuses, the overview's "no ledger rows" and a stream never
    # checked (tidemark.stream_glance) have a colour.
    assert set(STATUS_STYLES) == {status.value for status in QualityStatus} | {"ACTIVE", "IDLE", NO_LEDGER, NOT_CHECKED}


def test_a_run_asked_for_by_name_and_a_run_that_is_not_there(two_runs):
    reports, _ = two_runs

    assert read_summary(latest_summary(reports, "telemetry", "scheduled__older")).run_name == "scheduled__older"
    with pytest.raises(
        CommandFailed, match=r"no quality run 'nope' .*the runs there: scheduled__newer, scheduled__older"
    ):
        latest_summary(reports, "telemetry", "nope")


def test_no_summary_yet_says_how_to_get_one(tmp_path):
    with pytest.raises(CommandFailed) as failure:
        latest_summary(tmp_path / "reports", "telemetry")

    assert "tidemark_quality__telemetry has not finished a run yet. `tidemark demo` runs it" in str(failure.value)


def test_a_file_that_is_not_a_summary_is_named(tmp_path):
    path = tmp_path / "summary.json"
    path.write_text('{"stream": "telemetry"}')

    with pytest.raises(CommandFailed) as failure:
        read_summary(path)

    assert str(failure.value) == (
        f"{path} is not a quality summary tidemark can read (Object missing required field `run_name`); "
        "open the summary.html beside it, or run the quality DAG again to write a new one"
    )


def test_the_report_command_reads_the_summary_under_tidemark_home(cli_home, capsys):
    _write_run(
        cli_home / "reports",
        "manual__1",
        [_partition(0, QualityStatus.LAGGING, "W_p 2h behind G")],
        [_check("stall", True)],
    )

    assert main(["report", "telemetry"]) == 0
    assert "partition 0 LAGGING: W_p 2h behind G" in capsys.readouterr().out
