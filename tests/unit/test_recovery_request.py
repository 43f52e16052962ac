"""Recovery params from the Airflow form or the quality DAG: validated, canonical, ordered by retention."""

from dataclasses import replace
from pathlib import Path

import pytest

from tidemark.recovery_request import (
    OffsetRange,
    RecoveryRequest,
    RecoveryRequestError,
    order_by_retention_deadline,
    parse_recovery_request,
    split_by_retention,
)
from tidemark.stream_config import load_stream

REPO = Path(__file__).resolve().parents[2]
ENV = {"TIDEMARK_LAKE_ROOT": "/lake", "TIDEMARK_CHECKPOINT_ROOT": "/checkpoints"}
TELEMETRY = load_stream(REPO / "conf" / "streams.yaml", "telemetry", ENV)  # 4 partitions
STREAMS = {"telemetry": TELEMETRY, "clicks": replace(TELEMETRY, name="clicks")}


def _params(**overrides):
    return {"stream": "telemetry", "partition": 2, "ranges": [[100, 200]], "reason": "gap found by the quality run", **overrides}


@pytest.mark.parametrize(
    "ranges",
    [
        [[300, 350], [100, 200], [200, 250]],
        [(300, 350), (100, 200), (200, 250)],
        [{"start": 300, "end": 350}, {"start": 100, "end": 200}, {"start": "200", "end": "250"}],
        "300-350, 100-200,200-250",
        " 100 - 200 ,200-250,300-350,",
    ],
    ids=["pairs", "tuples", "mappings", "text", "text-with-spaces"],
)
def test_every_form_gives_the_same_sorted_merged_ranges(ranges):
    request = parse_recovery_request(_params(ranges=ranges), STREAMS)
    assert request == RecoveryRequest("telemetry", 2, (OffsetRange(100, 250), OffsetRange(300, 350)), "gap found by the quality run")


def test_partition_as_numeric_text_and_reason_trimmed():
    request = parse_recovery_request(_params(partition=" 3 ", reason="  replay after the broker outage \n"), STREAMS)
    assert (request.partition, request.reason) == (3, "replay after the broker outage")


def test_json_round_trip():
    request = parse_recovery_request(_params(ranges="0-10,20-30"), STREAMS)
    data = request.to_json()
    assert data == {
        "stream": "telemetry",
        "partition": 2,
        "ranges": [{"start": 0, "end": 10}, {"start": 20, "end": 30}],
        "reason": "gap found by the quality run",
    }
    assert RecoveryRequest.from_json(data) == request
    # What the quality DAG sends is what the recover DAG parses.
    assert parse_recovery_request(data, STREAMS) == request


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"stream": "orders"}, r"^param 'stream': unknown stream 'orders'; configured streams: clicks, telemetry$"),
        ({"stream": None}, r"^param 'stream': required: one of clicks, telemetry$"),
        ({"partition": "two"}, r"^param 'partition': expected a whole number, got 'two'$"),
        ({"partition": 1.0}, r"^param 'partition': expected a whole number, got 1\.0$"),
        ({"partition": True}, r"^param 'partition': expected a whole number, got True$"),
        ({"partition": None}, r"^param 'partition': required$"),
        ({"partition": 4}, r"^param 'partition': partition 4 is outside \[0, 4\): stream 'telemetry' has 4 partitions$"),
        ({"partition": "-1"}, r"^param 'partition': partition -1 is outside \[0, 4\)"),
        ({"ranges": [["a", 5]]}, r"^param 'ranges': start of a-5: expected a whole number, got 'a'$"),
        ({"ranges": [[1.5, 5]]}, r"^param 'ranges': start of 1\.5-5: expected a whole number"),
        ({"ranges": "100-2x0"}, r"^param 'ranges': '100-2x0' is not start-end with whole-number offsets"),
        ({"ranges": [[-5, 10]]}, r"^param 'ranges': -5-10: offsets are never negative$"),
        ({"ranges": "-5-10"}, r"^param 'ranges': -5-10: offsets are never negative$"),
        ({"ranges": "300-200"}, r"^param 'ranges': 300-200: start after end"),
        ({"ranges": [[200, 200]]}, r"^param 'ranges': 200-200: start after end"),
        ({"ranges": []}, r"^param 'ranges': no ranges given"),
        ({"ranges": " , "}, r"^param 'ranges': no ranges given"),
        ({"ranges": None}, r"^param 'ranges': required"),
        ({"ranges": 100}, r"^param 'ranges': expected a list of \[start, end\] pairs or text like 100-200, got int$"),
        ({"ranges": [[1, 2, 3]]}, r"^param 'ranges': \[1, 2, 3\] is not a \[start, end\] pair"),
        ({"ranges": [{"start": 1, "stop": 2}]}, r"^param 'ranges': \{'start': 1, 'stop': 2\} is not a \[start, end\] pair"),
        ({"ranges": "100-200,150-160"}, r"^param 'ranges': \[100, 200\) and \[150, 160\) overlap; list each offset once$"),
        ({"ranges": "0-10,10-20,15-30"}, r"^param 'ranges': \[10, 20\) and \[15, 30\) overlap"),
        ({"reason": "   "}, r"^param 'reason': say why this recovery runs"),
        ({"reason": None}, r"^param 'reason': say why this recovery runs"),
        ({"reason": "x" * 501}, r"^param 'reason': 501 characters; at most 500$"),
    ],
)
def test_bad_params_fail_naming_the_param(overrides, message):
    with pytest.raises(RecoveryRequestError, match=message) as raised:
        parse_recovery_request(_params(**overrides), STREAMS)
    assert raised.value.param == next(iter(overrides))


def test_a_reason_of_exactly_500_characters_is_accepted():
    assert len(parse_recovery_request(_params(reason="y" * 500), STREAMS).reason) == 500


def test_a_request_refuses_ranges_out_of_canonical_order():
    with pytest.raises(ValueError, match="sorted, disjoint and merged"):
        RecoveryRequest("telemetry", 0, (OffsetRange(10, 20), OffsetRange(20, 30)), "adjacent, not merged")
    with pytest.raises(ValueError, match="at least one offset range"):
        RecoveryRequest("telemetry", 0, (), "nothing")


def test_split_by_retention_loses_what_is_below_the_earliest_offset():
    ranges = [OffsetRange(0, 50), OffsetRange(80, 150), OffsetRange(100, 120), OffsetRange(200, 300)]
    recoverable, lost = split_by_retention(ranges, earliest_offset=100)
    assert lost == [OffsetRange(0, 50), OffsetRange(80, 100)]
    assert recoverable == [OffsetRange(100, 150), OffsetRange(100, 120), OffsetRange(200, 300)]
    assert split_by_retention(ranges[:1], earliest_offset=50) == ([], [OffsetRange(0, 50)])
    assert split_by_retention(ranges[:1], earliest_offset=0) == ([OffsetRange(0, 50)], [])


def test_order_oldest_record_first_unknown_last_ties_by_partition_then_start():
    items = [
        (3, OffsetRange(10, 20), None),
        (1, OffsetRange(500, 600), 1_700_000_060_000),
        (2, OffsetRange(0, 5), 1_700_000_000_000),
        (0, OffsetRange(700, 800), 1_700_000_060_000),
        (1, OffsetRange(100, 200), 1_700_000_060_000),
        (0, OffsetRange(0, 1), None),
    ]
    assert order_by_retention_deadline(items) == [
        (2, OffsetRange(0, 5), 1_700_000_000_000),
        (0, OffsetRange(700, 800), 1_700_000_060_000),
        (1, OffsetRange(100, 200), 1_700_000_060_000),
        (1, OffsetRange(500, 600), 1_700_000_060_000),
        (0, OffsetRange(0, 1), None),
        (3, OffsetRange(10, 20), None),
    ]


def test_offset_range_has_one_definition():
    from tidemark import offset_coverage, recovery_request

    assert recovery_request.OffsetRange is offset_coverage.OffsetRange
