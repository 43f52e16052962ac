"""The persist job's run summary is one Struct (tidemark.persist_run_summary), read strictly, and
each newly sealed hour becomes one event extra.

No Airflow here: only the pure halves of tidemark_airflow.run_summary and .sealed_hour_assets.
"""

from __future__ import annotations

import json

import msgspec
import pytest

from tidemark.persist_run_summary import PersistRunSummary
from tidemark_airflow.run_summary import RunSummaryError, parse_run_summary, read_run_summary
from tidemark_airflow.sealed_hour_assets import sealed_hour_event_extras

TEN_MINUTES_MS = 10 * 60 * 1000

# The file as spark_jobs/persist/job.py writes it (the shape of the file before it was a Struct).
DOCUMENT = {
    "stream": "telemetry",
    "mode": "available_now",
    "query_id": "5c1e0d0e-7b0a-4c1e-9d1a-1f6a2b3c4d5e",
    "batches": 5,
    "global_watermark": "2026-11-22T03:59:29.999Z",
    "sealed_hours": ["2026-11-22T01:00:00Z", "2026-11-22T02:00:00Z"],
    "event_hours": ["2026-11-22T01:00:00.000Z", "2026-11-22T02:00:00.000Z", "2026-11-22T03:00:00.000Z"],
    "insert_only_batches": 1,
    "inserted": 1500,
    "commit_conflicts_retried": 0,
    "resumed_from_ledger": False,
    "throttled_calls": None,
}


def summary_text(**overrides) -> str:
    return json.dumps({**DOCUMENT, **overrides})


def parse(text: str) -> PersistRunSummary:
    return parse_run_summary(text, stream="telemetry", allowed_lateness_ms=TEN_MINUTES_MS)


def test_the_file_the_job_writes_is_read_back_as_the_same_value(tmp_path):
    written = PersistRunSummary(
        stream="telemetry",
        mode="available_now",
        query_id="q",
        batches=5,
        global_watermark="2026-11-22T03:59:29.999Z",
        sealed_hours=("2026-11-22T01:00:00.000Z",),
        event_hours=("2026-11-22T01:00:00.000Z", "2026-11-22T02:00:00.000Z"),
        insert_only_batches=0,
        inserted=10,
        commit_conflicts_retried=2,
        resumed_from_ledger=True,
    )
    path = tmp_path / "folder" / "run-summary.json"
    written.write(path)

    assert read_run_summary(path, stream="telemetry", allowed_lateness_ms=TEN_MINUTES_MS) == written
    assert json.loads(path.read_text())["sealed_hours"] == ["2026-11-22T01:00:00.000Z"]
    assert path.read_text().endswith("}\n")


def test_a_summary_with_two_sealed_hours_gives_one_event_extra_per_hour(tmp_path):
    path = tmp_path / "run-summary.json"
    path.write_text(summary_text())

    summary = read_run_summary(path, stream="telemetry", allowed_lateness_ms=TEN_MINUTES_MS)

    assert summary == msgspec.convert(DOCUMENT, PersistRunSummary)
    assert (summary.insert_only_batches, summary.inserted, summary.throttled_calls) == (1, 1500, None)
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
        ('{"stream": "telemetry", "sealed_hours": [', "not a persist run summary tidemark can read"),
        ("[]", r"Expected `object`, got `array`"),
        (summary_text(stream="orders"), "stream is 'orders', expected 'telemetry'"),
        (summary_text(sealed_hours=None), r"Expected `array`, got `null` - at `\$.sealed_hours`"),
        (summary_text(sealed_hours="2026-11-22T01:00:00Z"), r"Expected `array`, got `str` - at `\$.sealed_hours`"),
        (summary_text(sealed_hours=[1795827600000]), r"Expected `str`, got `int` - at `\$.sealed_hours\[0\]`"),
        (summary_text(inserted="many"), r"Expected `int`, got `str` - at `\$.inserted`"),
        (summary_text(mode="sometimes"), r"Invalid enum value 'sometimes' - at `\$.mode`"),
        (
            json.dumps({k: v for k, v in DOCUMENT.items() if k != "event_hours"}),
            r"missing required field `event_hours`",
        ),
        (summary_text(batch_count=5), r"unknown field `batch_count`"),
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
    assert str(raised.value).endswith("the persist job wrote a summary tidemark cannot trust.")
