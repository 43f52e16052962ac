"""The persist job's run summary is read strictly, and each newly sealed hour becomes one event extra.

No Airflow here: only the pure halves of tidemark_airflow.run_summary and .sealed_hour_assets.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from tidemark_airflow.run_summary import RunSummary, RunSummaryError, parse_run_summary, read_run_summary
from tidemark_airflow.sealed_hour_assets import sealed_hour_event_extras

TEN_MINUTES_MS = 10 * 60 * 1000


def summary_text(**overrides) -> str:
    document = {
        "stream": "telemetry",
        "mode": "available_now",
        "batches": 5,
        "global_watermark": "2026-11-22T03:59:29.999Z",
        "sealed_hours": ["2026-11-22T01:00:00Z", "2026-11-22T02:00:00Z"],
    }
    document.update(overrides)
    return json.dumps(document)


def parse(text: str) -> RunSummary:
    return parse_run_summary(text, stream="telemetry", allowed_lateness_ms=TEN_MINUTES_MS)


def test_a_summary_with_two_sealed_hours_gives_one_event_extra_per_hour(tmp_path):
    path = tmp_path / "run-summary.json"
    path.write_text(summary_text())

    summary = read_run_summary(path, stream="telemetry", allowed_lateness_ms=TEN_MINUTES_MS)

    assert summary == RunSummary(
        stream="telemetry",
        global_watermark=datetime(2026, 11, 22, 3, 59, 29, 999000, tzinfo=UTC),
        sealed_hours=(
            datetime(2026, 11, 22, 1, tzinfo=UTC),
            datetime(2026, 11, 22, 2, tzinfo=UTC),
        ),
    )
    assert sealed_hour_event_extras(summary) == [
        {"stream": "telemetry", "hour": "2026-11-22T01:00:00Z", "global_watermark": "2026-11-22T03:59:29.999Z"},
        {"stream": "telemetry", "hour": "2026-11-22T02:00:00Z", "global_watermark": "2026-11-22T03:59:29.999Z"},
    ]


def test_times_are_written_back_in_one_canonical_utc_form():
    summary = parse(
        summary_text(global_watermark="2026-11-22T03:59:29.999+00:00", sealed_hours=["2026-11-22T01:00:00.000Z"])
    )

    assert sealed_hour_event_extras(summary) == [
        {"stream": "telemetry", "hour": "2026-11-22T01:00:00Z", "global_watermark": "2026-11-22T03:59:29.999Z"},
    ]


def test_no_sealed_hour_means_no_event():
    assert sealed_hour_event_extras(parse(summary_text(sealed_hours=[]))) == []


def test_a_stream_without_a_global_watermark_yet_seals_nothing():
    summary = parse(summary_text(global_watermark=None, sealed_hours=[]))

    assert summary.global_watermark is None
    assert sealed_hour_event_extras(summary) == []


def test_an_hour_is_sealed_exactly_when_the_watermark_reaches_its_end_plus_allowed_lateness():
    on_time = parse(summary_text(global_watermark="2026-11-22T03:10:00.000Z", sealed_hours=["2026-11-22T02:00:00Z"]))
    assert [extra["hour"] for extra in sealed_hour_event_extras(on_time)] == ["2026-11-22T02:00:00Z"]

    with pytest.raises(RunSummaryError, match=r"sealed_hours\[0\]: '2026-11-22T02:00:00Z' is not sealed yet"):
        parse(summary_text(global_watermark="2026-11-22T03:09:59.999Z", sealed_hours=["2026-11-22T02:00:00Z"]))


def test_a_missing_summary_says_where_it_was_expected_and_what_to_check(tmp_path):
    path = tmp_path / "run-summary.json"

    with pytest.raises(RunSummaryError) as raised:
        read_run_summary(path, stream="telemetry", allowed_lateness_ms=TEN_MINUTES_MS)

    message = str(raised.value)
    assert str(path) in message
    assert "--run-summary" in message and "client deploy mode" in message


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ('{"stream": "telemetry", "sealed_hours": [', "not valid JSON"),
        ("[]", "expected a JSON object, got list"),
        (summary_text(stream="orders"), "stream is 'orders', expected 'telemetry'"),
        (summary_text(sealed_hours=None), "sealed_hours must be a list"),
        (summary_text(sealed_hours="2026-11-22T01:00:00Z"), "sealed_hours must be a list"),
        (summary_text(sealed_hours=[1795827600000]), r"sealed_hours\[0\] must be an ISO-8601 UTC time string"),
        (summary_text(sealed_hours=["yesterday"]), r"sealed_hours\[0\]: 'yesterday' is not an ISO-8601 time"),
        (summary_text(sealed_hours=["2026-11-22T01:00:00"]), r"is not in UTC"),
        (summary_text(sealed_hours=["2026-11-22T01:00:00+01:00"]), r"is not in UTC"),
        (summary_text(sealed_hours=["2026-11-22T01:30:00Z"]), r"is not the start of an hour"),
        (
            summary_text(sealed_hours=["2026-11-22T02:00:00Z", "2026-11-22T01:00:00Z"]),
            r"sealed_hours\[1\]: '2026-11-22T01:00:00Z' does not come after 2026-11-22T02:00:00Z",
        ),
        (summary_text(sealed_hours=["2026-11-22T01:00:00Z", "2026-11-22T01:00:00Z"]), r"hours must ascend, once each"),
        (summary_text(global_watermark="soon"), r"global_watermark: 'soon' is not an ISO-8601 time"),
        (summary_text(global_watermark=None), r"listed as sealed but there is no global_watermark"),
    ],
)
def test_a_malformed_summary_is_refused_naming_what_is_wrong(text, complaint):
    with pytest.raises(RunSummaryError, match=complaint) as raised:
        parse(text)

    assert str(raised.value).startswith("run summary <text>: ")
