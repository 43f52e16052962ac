"""The per-hour quality report is one Struct (tidemark.hour_report): written by the quality run,
read back by reconciling (expectations.checked_hours) as that type; older reports still read, and
one that cannot be read names the file and sends its hour back to be checked."""

from __future__ import annotations

import json
import logging

import pytest

from expectations.checked_hours import hour_report_path, unchecked_sealed_hours
from tidemark.event_time_text import parse_event_time
from tidemark.hour_report import HourReport, HourReportUnreadable, read_hour_report, write_hour_report
from tidemark.quality_status import QualityStatus
from tidemark.quality_summary import HourSummary, LakeDamageSummary

HOUR = 3_600_000
H = parse_event_time("2026-11-22T01:00:00Z")


def report(**changes) -> HourReport:
    fields = dict(
        stream="telemetry",
        hour="2026-11-22T01:00:00Z",
        hour_ms=H,
        run_name="manual__1.check",
        checked_at_ms=H + 2 * HOUR,
        sealed_at_ms=H + HOUR + 600_000,
        success=False,
        partitions=(
            HourSummary(
                hour="2026-11-22T01:00:00Z",
                hour_ms=H,
                partition=1,
                status=QualityStatus.HOLE,
                records=97,
                late=0,
                quarantined=0,
                ranges=2,
                data_records=100,
                persisted=97,
                duplicated_offsets=0,
                active_history_hours=3,
                failed_checks=("completeness",),
            ),
        ),
        damage=(
            LakeDamageSummary(
                table="events",
                version=7,
                operation="DELETE",
                kind="rows_removed",
                rows=3,
                hours=("2026-11-22T01:00:00Z",),
            ),
        ),
        summary_html="/reports/telemetry/runs/manual__1.check/summary.html",
    )
    return HourReport(**{**fields, **changes})


def test_a_report_is_written_atomically_and_read_back_as_the_same_value(tmp_path):
    path = hour_report_path(tmp_path, "telemetry", H)
    write_hour_report(path, report())

    assert path.name == "2026-11-22T01Z.json"
    assert read_hour_report(path) == report()
    assert list(path.parent.iterdir()) == [path], "no partial file left behind"
    document = json.loads(path.read_text())
    assert list(document) == [
        "stream",
        "hour",
        "hour_ms",
        "run_name",
        "checked_at_ms",
        "sealed_at_ms",
        "success",
        "partitions",
        "damage",
        "summary_html",
    ]
    assert (document["partitions"][0]["status"], document["damage"][0]["operation"]) == ("HOLE", "DELETE")


def test_a_report_written_before_damage_was_recorded_still_reads(tmp_path):
    path = tmp_path / "old.json"
    old = {k: v for k, v in json.loads(_encoded(report())).items() if k != "damage"}
    path.write_text(json.dumps({**old, "written_by": "a newer tidemark"}))

    assert read_hour_report(path) == report(damage=())


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("{", "is not an hour report tidemark can read"),
        ("{}", r"missing required field `stream`"),
        (None, r"Expected `int \| null`, got `str` - at `\$.sealed_at_ms`"),
    ],
)
def test_a_report_that_is_not_one_is_refused_naming_the_file_and_the_field(tmp_path, text, complaint):
    path = tmp_path / "hour.json"
    path.write_text(text if text is not None else _encoded(report()).replace(str(H + HOUR + 600_000), '"soon"'))

    with pytest.raises(HourReportUnreadable, match=complaint) as raised:
        read_hour_report(path)
    assert str(raised.value).startswith(f"{path} ")


def test_reconciling_lists_hours_without_a_report_amended_since_or_whose_report_cannot_be_read(tmp_path, caplog):
    write_hour_report(hour_report_path(tmp_path, "telemetry", H), report())
    write_hour_report(hour_report_path(tmp_path, "telemetry", H + HOUR), report(hour_ms=H + HOUR, sealed_at_ms=None))
    unreadable = hour_report_path(tmp_path, "telemetry", H + 2 * HOUR)
    unreadable.write_text('{"stream": "telemetry"')
    seals = {H - HOUR: H + HOUR, H: H + HOUR + 600_000, H + HOUR: H + 3 * HOUR, H + 2 * HOUR: H + 4 * HOUR}

    with caplog.at_level(logging.WARNING, logger="tidemark.quality"):
        due = unchecked_sealed_hours(seals, tmp_path, "telemetry")
    warnings = [r.msg for r in caplog.records if isinstance(r.msg, dict)]

    # H - 1h: no report; H: checked at its seal; H + 1h: seal unknown when checked; H + 2h: unreadable.
    assert due == [H - HOUR, H + HOUR, H + 2 * HOUR]
    assert unchecked_sealed_hours({**seals, H: H + 3 * HOUR}, tmp_path, "telemetry")[:2] == [H - HOUR, H]
    (warning,) = warnings
    assert warning["event"] == "quality_hour_report_unreadable"
    assert warning["error"].startswith(f"{unreadable} is not an hour report tidemark can read (")


def _encoded(value: HourReport) -> str:
    from tidemark.typed_file import encode_indented

    return encode_indented(value).decode()


def test_reconciling_reads_each_report_once_and_again_only_when_its_file_changed(tmp_path, monkeypatch):
    from expectations import checked_hours

    hours = [H + n * HOUR for n in range(6)]
    for hour_ms in hours:
        write_hour_report(hour_report_path(tmp_path, "telemetry", hour_ms), report(hour_ms=hour_ms))
    seals = {hour_ms: H + HOUR + 600_000 for hour_ms in hours}
    parsed = []
    decode = checked_hours.decode_hour_report
    monkeypatch.setattr(
        checked_hours, "decode_hour_report", lambda data, path: parsed.append(path) or decode(data, path)
    )

    assert unchecked_sealed_hours(seals, tmp_path, "telemetry") == []
    assert len(parsed) == 6
    parsed.clear()
    assert unchecked_sealed_hours(seals, tmp_path, "telemetry") == []
    assert parsed == []  # the index answered for every report

    # A report rewritten (a run checked the hour again) and one edited by hand are read again.
    rewritten = hour_report_path(tmp_path, "telemetry", hours[1])
    write_hour_report(rewritten, report(hour_ms=hours[1], sealed_at_ms=H + 5 * HOUR))
    edited = hour_report_path(tmp_path, "telemetry", hours[2])
    edited.write_text('{"stream": "telemetry"')
    due = unchecked_sealed_hours({**seals, hours[1]: H + 5 * HOUR, hours[3]: H + 6 * HOUR}, tmp_path, "telemetry")
    assert due == [hours[2], hours[3]]  # edited: unreadable; hours[3]: sealed again since its report
    assert sorted(parsed) == sorted([rewritten, edited])

    # A broken index is only a memory lost: every report is read again, the answer is the same.
    parsed.clear()
    checked_hours.checked_hours_index_path(tmp_path, "telemetry").write_text("not json")
    assert unchecked_sealed_hours(seals, tmp_path, "telemetry") == [hours[2]]
    assert len(parsed) == 6
