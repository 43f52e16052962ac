"""Alarm messages built from typed values: the quality run's summary (as its XCom holds it), the
recovery's result, the seal deadline's figures. Exact subjects and fields; no connection detail
ever in them."""

from __future__ import annotations

import json

import pytest

from tidemark.alarm_memory import AlarmMemory, due_notices
from tidemark.offset_coverage import OffsetRange
from tidemark.quality_status import QualityStatus
from tidemark.quality_summary import (
    PartitionSummary,
    QualitySummary,
    QualitySummaryError,
    SummaryPaths,
    quality_summary_builtins,
)
from tidemark.recovery_request import RecoveryRequest
from tidemark_airflow.alert_message import (
    Alarm,
    TaskIdentity,
    notice_alarms,
    overdue_hours,
    persist_failed_alarm,
    recovery_lost_alarm,
    unsealed_hour_alarm,
)

HOUR_MS = 3_600_000
TASK = TaskIdentity(
    "tidemark_quality__telemetry", "scheduled__2026-11-25T03:00:00+00:00", "verdict", 1, "http://airflow/log?x=1"
)


def _partition(partition, status, reasons=(), holes=(), lost=()):
    return PartitionSummary(
        partition=partition,
        status=QualityStatus(status),
        reason=reasons[0] if reasons else "reading",
        reasons=tuple(reasons),
        records=10,
        holes=tuple(holes),
        lost=tuple(lost),
    )


def _result(*partitions):
    """The quality task's XCom: the run's summary as plain JSON values."""
    return quality_summary_builtins(
        QualitySummary(
            stream="telemetry",
            run_name="r1",
            now_ms=1_795_573_800_000,
            now="2026-11-25T02:30:00.000Z",
            hours=("2026-11-25T01:00:00Z",),
            success=False,
            partitions=tuple(partitions),
            recovery_requests=(RecoveryRequest("telemetry", 2, (OffsetRange(0, 150),), "STOP"),),
            paths=SummaryPaths(
                summary_json="/r/telemetry/runs/r1/summary.json", summary_html="/r/telemetry/runs/r1/summary.html"
            ),
        )
    )


NOW_MS = 1_795_573_800_000


def quality_alarm(result, task, memory=None, now_ms=NOW_MS, remind_every_ms=None):
    """The one message a quality run makes due (None: none), as the alarms task builds it."""
    statuses = {p["partition"]: p["status"] for p in result["partitions"]}
    notices, _ = due_notices(memory or AlarmMemory(), statuses, now_ms, remind_every_ms)
    alarms = notice_alarms(result, notices, now_ms, task)
    assert len(alarms) <= 1
    return alarms[0] if alarms else None


def test_a_quality_run_with_alarm_statuses_gives_one_alarm_worst_first():
    result = _result(
        _partition(0, "OK"),
        _partition(1, "HOLE", ["offsets [5, 9) are missing"], holes=[(5, 9)]),
        _partition(2, "STOP", ["the read position stood at 0 for 6s while the log grew to 150"]),
        _partition(3, "LAGGING", ["W_p is 2h behind G"]),
        _partition(4, "LOST", ["offsets [0, 3) left the log"], lost=[(0, 3)]),
        _partition(5, "WARN", ["42 late records"]),
    )
    alarm = quality_alarm(result, TASK)
    assert alarm.subject == "[tidemark] telemetry: partition 4 LOST, partition 1 HOLE, partition 2 STOP"
    assert [(p.partition, p.status) for p in alarm.partitions] == [(4, "LOST"), (1, "HOLE"), (2, "STOP")]
    body = alarm.to_json()
    assert (body["kind"], body["notice"], body["stream"]) == ("quality", "raised", "telemetry")
    assert body["partitions"][1] == {
        "partition": 1,
        "status": "HOLE",
        "reasons": ["offsets [5, 9) are missing"],
        "holes": [[5, 9]],
        "lost": [],
        "previous_status": None,
        "since": "2026-11-25T02:30:00.000Z",
    }
    assert body["partitions"][0]["lost"] == [[0, 3]]
    assert body["summary"] == {"html": "/r/telemetry/runs/r1/summary.html", "json": "/r/telemetry/runs/r1/summary.json"}
    assert body["details"] == {"hours_checked": ["2026-11-25T01:00:00Z"], "recovery_requested": [2]}
    assert (body["dag_id"], body["run_id"], body["task_id"], body["log_url"]) == (
        TASK.dag_id,
        TASK.run_id,
        "verdict",
        TASK.log_url,
    )
    json.dumps(body)  # a webhook body: JSON as it is
    html = alarm.html()
    assert "<b>STOP</b>" in html and "file:///r/telemetry/runs/r1/summary.html" in html and "[5, 9)" in html


def test_a_lasting_alarm_is_recalled_and_then_resolved_each_in_its_own_words():
    stopped = _result(_partition(0, "OK"), _partition(2, "STOP", ["the read position stood at 0"]))
    _, memory = due_notices(AlarmMemory(), {0: "OK", 2: "STOP"}, NOW_MS, None)

    reminder = quality_alarm(stopped, TASK, memory, NOW_MS + 4 * HOUR_MS, remind_every_ms=4 * HOUR_MS)
    resolved = quality_alarm(_result(_partition(0, "OK"), _partition(2, "OK")), TASK, memory, NOW_MS + 5 * HOUR_MS)

    assert reminder.subject == "[tidemark] telemetry: still partition 2 STOP for 4h"
    assert reminder.to_json()["partitions"][0]["reasons"] == ["the read position stood at 0"]
    assert resolved.subject == "[tidemark] telemetry: resolved: partition 2 OK (was STOP for 5h)"
    body = resolved.to_json()
    assert body["notice"] == "resolved"
    assert body["partitions"] == [
        {
            "partition": 2,
            "status": "OK",
            "reasons": [],
            "holes": [],
            "lost": [],
            "previous_status": "STOP",
            "since": "2026-11-25T02:30:00.000Z",
        }
    ]


def test_no_alarm_when_no_partition_is_in_an_alarm_status():
    assert quality_alarm(_result(_partition(0, "OK"), _partition(1, "WARN"), _partition(2, "LAGGING")), TASK) is None


def test_a_result_that_is_not_a_quality_summary_is_named_with_its_field():
    result = _result(_partition(2, "STOP"))
    result["partitions"][0]["status"] = "BROKEN"

    with pytest.raises(QualitySummaryError) as failure:
        notice_alarms(result, [], NOW_MS, TASK)

    assert str(failure.value).startswith(
        "the quality task's result (XCom) is not a quality summary tidemark can read "
        "(Invalid enum value 'BROKEN' - at `$.partitions[0].status`)"
    )


def test_reasons_are_escaped_in_the_email_and_kept_as_they_are_in_the_json():
    alarm = quality_alarm(_result(_partition(2, "STALL", ["<script>x</script> {{ conn.password }}"])), TASK)
    assert "<script>" not in alarm.html() and "&lt;script&gt;" in alarm.html()
    assert alarm.to_json()["partitions"][0]["reasons"] == ["<script>x</script> {{ conn.password }}"]


def test_a_recovery_with_lost_offsets_names_them_and_what_was_recovered():
    request = {"stream": "telemetry", "partition": 2, "ranges": [{"start": 0, "end": 150}], "reason": "STOP: ..."}
    result = {"recovered": [{"start": 40, "end": 150}], "lost": [[0, 40]], "inserted": 110, "event_hours": []}
    alarm = recovery_lost_alarm("telemetry", request, result, TASK)
    assert alarm.subject == "[tidemark] telemetry: partition 2 LOST"
    (finding,) = alarm.to_json()["partitions"]
    assert finding["lost"] == [[0, 40]] and finding["status"] == "LOST"
    assert finding["reasons"] == [
        "40 offsets left the log (retention) before they were persisted; 110 records of the recoverable ranges were inserted"
    ]
    assert alarm.details["requested"] == [[0, 150]] and alarm.details["recovered"] == [[40, 150]]
    assert recovery_lost_alarm("telemetry", request, {**result, "lost": []}, TASK) is None


def test_a_persist_failure_names_the_tries_and_the_error_type_only():
    task = TaskIdentity("tidemark_persist__telemetry", "manual__1", "persist", 3, None)
    alarm = persist_failed_alarm("telemetry", "AirflowException", task)
    assert alarm.subject == "[tidemark] telemetry: the persist job failed after 3 tries"
    assert alarm.to_json()["details"]["error"] == "AirflowException"


def test_overdue_hours_are_those_whose_end_plus_the_bound_has_passed():
    sealed = 10 * HOUR_MS  # hour [10h, 11h) sealed
    bound = 30 * 60_000
    # Hour 11h ends at 12h; due at 12h30.
    assert overdue_hours(sealed, bound, 12 * HOUR_MS + bound - 1) == []
    assert overdue_hours(sealed, bound, 12 * HOUR_MS + bound) == [11 * HOUR_MS]
    assert overdue_hours(sealed, bound, 14 * HOUR_MS + bound) == [11 * HOUR_MS, 12 * HOUR_MS, 13 * HOUR_MS]
    assert overdue_hours(None, bound, 99 * HOUR_MS) == [], "a stream that never sealed is the stall checks' to report"


def test_an_unsealed_hour_alarm_lists_the_hours_and_the_bound():
    alarm = unsealed_hour_alarm(
        "telemetry", [11 * HOUR_MS, 12 * HOUR_MS], 10 * HOUR_MS, 30 * 60_000, 13 * HOUR_MS + 1_800_000, TASK
    )
    assert alarm.subject == "[tidemark] telemetry: 2 hours not sealed 30m after their end"
    assert alarm.details["unsealed_hours"] == ["1970-01-01T11:00:00.000Z", "1970-01-01T12:00:00.000Z"]
    assert alarm.details["newest_sealed_hour"] == "1970-01-01T10:00:00.000Z"


def test_an_alarm_has_no_field_for_a_connection():
    fields = set(Alarm.__dataclass_fields__) | set(TaskIdentity.__dataclass_fields__)
    assert not fields & {"host", "login", "password", "conn_id", "extra", "uri"}
