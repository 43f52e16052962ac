"""Backfill params: every bad one fails before any work, naming the param."""

from __future__ import annotations

import pytest

from tidemark.backfill_request import BackfillRequest, BackfillRequestError, parse_backfill_request, shadow_name_for_run
from tidemark.event_time_text import parse_event_time
from tidemark.stream_config import load_streams

NOW = parse_event_time("2026-11-22T12:00:00Z")


@pytest.fixture(scope="module")
def streams(tmp_path_factory):
    from pathlib import Path

    import yaml

    document = yaml.safe_load((Path(__file__).resolve().parents[2] / "conf" / "streams.yaml").read_text())
    for stream in document["streams"].values():
        stream["lake"] = {"root": "/lake", "checkpoint_root": "/checkpoints"}
    path = tmp_path_factory.mktemp("conf") / "streams.yaml"
    path.write_text(yaml.safe_dump(document))
    return load_streams(path)


def _params(**overrides):
    return {"stream": "telemetry", "start": "2026-11-21T00:00:00Z", "end": "2026-11-22T00:00:00Z", **overrides}


def _error(streams, **overrides) -> BackfillRequestError:
    with pytest.raises(BackfillRequestError) as caught:
        parse_backfill_request(_params(**overrides), streams, NOW, run_name="manual__2026-11-22T10:00:00+00:00")
    return caught.value


def test_defaults_read_every_partition_into_the_stream_tables(streams):
    request = parse_backfill_request(_params(), streams, NOW)
    assert request == BackfillRequest(
        "telemetry",
        parse_event_time("2026-11-21T00:00:00Z"),
        parse_event_time("2026-11-22T00:00:00Z"),
        (0, 1, 2, 3),
        None,
    )
    assert request.target == "events"
    assert BackfillRequest.from_json(request.to_json()) == request


def test_a_shadow_target_is_named_after_the_run_unless_named(streams):
    named_by_run = parse_backfill_request(
        _params(target="shadow"), streams, NOW, run_name="manual__2026-11-22T10:00:00+00:00"
    )
    assert named_by_run.shadow == "manual_2026_11_22t10_00_00_00_00"
    assert named_by_run.target == "shadow:manual_2026_11_22t10_00_00_00_00"
    named = parse_backfill_request(_params(target="shadow", shadow_name="nov21"), streams, NOW)
    assert named.shadow == "nov21"


@pytest.mark.parametrize(
    "partitions, expected", [("2,0", (0, 2)), ([3], (3,)), (["1", 1], (1,)), ("", (0, 1, 2, 3)), ([], (0, 1, 2, 3))]
)
def test_partitions_in_every_spelling(streams, partitions, expected):
    assert parse_backfill_request(_params(partitions=partitions), streams, NOW).partitions == expected


@pytest.mark.parametrize(
    "overrides, param, words",
    [
        ({"stream": "nope"}, "stream", "unknown stream 'nope'"),
        ({"start": ""}, "start", "required"),
        ({"start": "yesterday"}, "start", "not an ISO-8601 time"),
        ({"end": "2026-11-22T00:00:00"}, "end", "no UTC offset"),
        ({"start": "2026-11-22T00:00:00Z", "end": "2026-11-21T00:00:00Z"}, "end", "is not after start"),
        ({"end": "2026-11-23T00:00:00Z"}, "end", "in the future"),
        ({"partitions": "0,4"}, "partitions", "partition 4 is outside [0, 4)"),
        ({"partitions": [True]}, "partitions", "not a partition number"),
        ({"partitions": "a"}, "partitions", "not a partition number"),
        ({"partitions": {"0": 1}}, "partitions", "expected a list"),
        ({"target": "late"}, "target", "must be one of events, shadow"),
        ({"target": "shadow", "shadow_name": "Bad Name!"}, "shadow_name", "not a table set name"),
    ],
)
def test_bad_params_fail_naming_the_param(streams, overrides, param, words):
    error = _error(streams, **overrides)
    assert error.param == param
    assert str(error).startswith(f"param {param!r}: ")
    assert words in str(error)


def test_shadow_names_from_run_ids_are_table_set_names():
    assert shadow_name_for_run("scheduled__2026-11-22T02:30:00+00:00") == "scheduled_2026_11_22t02_30_00_00_00"
    assert shadow_name_for_run("__A--b__") == "a_b"


def test_the_request_is_one_typed_value_its_json_round_trips_as_a_mapping_and_as_text(streams):
    request = parse_backfill_request(
        _params(target="shadow", shadow_name="nov21", compare=True, partitions="2,0"), streams, NOW
    )
    assert request.to_json() == {
        "stream": "telemetry",
        "start_ms": parse_event_time("2026-11-21T00:00:00Z"),
        "end_ms": parse_event_time("2026-11-22T00:00:00Z"),
        "partitions": [0, 2],
        "shadow": "nov21",
        "compare": True,
    }
    assert BackfillRequest.from_json(request.to_json()) == request
    assert BackfillRequest.decode(request.encode()) == request


def test_compare_applies_to_a_shadow_target_only(streams):
    assert parse_backfill_request(_params(compare=True), streams, NOW).compare is False
    assert parse_backfill_request(_params(target="shadow", shadow_name="s"), streams, NOW).compare is False
    assert _error(streams, compare="yes").param == "compare"
    with pytest.raises(ValueError, match="compare compares a shadow table set with live: it needs a shadow"):
        BackfillRequest("telemetry", 0, 1, (0,), None, compare=True)


@pytest.mark.parametrize(
    "change, param, words",
    [
        ({"start_ms": "2026-11-21T00:00:00Z"}, "start_ms", "Expected `int`, got `str` - at `$.start_ms`"),
        ({"partitions": [2, 0]}, "request", "partitions must be distinct, sorted and >= 0, got [2, 0]"),
        ({"shadow": "Bad Name!"}, "request", "'Bad Name!' is not a table set name"),
        ({"target": "shadow"}, "target", "unknown field `target`"),
    ],
)
def test_a_bad_request_fails_naming_the_field(change, param, words):
    document = {"stream": "telemetry", "start_ms": 0, "end_ms": 1, "partitions": [0], "shadow": None, "compare": False}
    with pytest.raises(BackfillRequestError) as caught:
        BackfillRequest.from_json({**document, **change})
    assert caught.value.param == param and words in str(caught.value)


def test_the_job_checks_the_request_against_the_configuration(streams):
    from tidemark.backfill_request import check_backfill_request

    request = BackfillRequest("telemetry", 0, 1, (0, 4))
    with pytest.raises(BackfillRequestError, match=r"^param 'partitions': partition 4 is outside \[0, 4\)"):
        check_backfill_request(request, streams)
    with pytest.raises(BackfillRequestError, match=r"^param 'stream': unknown stream 'orders'"):
        check_backfill_request(BackfillRequest("orders", 0, 1, (0,)), streams)
