"""Recovery requests: one typed value from the quality run to the job (JSON round trips, a bad
field named), and the params form a person fills (validated, canonical); ordered by retention."""

from pathlib import Path

import pytest

from tidemark.recovery_request import (
    OffsetRange,
    RecoveryRequest,
    RecoveryRequestError,
    check_recovery_request,
    order_by_retention_deadline,
    parse_recovery_form,
    recovery_request_from_params,
    split_by_retention,
)
from tidemark.stream_config import load_stream

REPO = Path(__file__).resolve().parents[2]
ENV = {"TIDEMARK_LAKE_ROOT": "/lake", "TIDEMARK_CHECKPOINT_ROOT": "/checkpoints"}
TELEMETRY = load_stream(REPO / "conf" / "streams.yaml", "telemetry", ENV)  # 4 partitions
# A second configured name is all these tests need of another stream.
STREAMS = {"telemetry": TELEMETRY, "clicks": TELEMETRY}
REQUEST = RecoveryRequest(
    "telemetry", 2, (OffsetRange(100, 250), OffsetRange(300, 350)), "gap found by the quality run"
)
DOCUMENT = {
    "stream": "telemetry",
    "partition": 2,
    "ranges": [{"start": 100, "end": 250}, {"start": 300, "end": 350}],
    "reason": "gap found by the quality run",
    "restart_live": False,
}


def _form(**overrides):
    return {
        "stream": "telemetry",
        "partition": 2,
        "ranges": "100-200",
        "reason": "gap found by the quality run",
        **overrides,
    }


def test_the_json_of_a_request_is_its_fields_and_round_trips_as_a_mapping_and_as_text():
    assert REQUEST.to_json() == DOCUMENT
    assert RecoveryRequest.from_json(DOCUMENT) == REQUEST
    assert REQUEST.encode() == (
        '{"stream":"telemetry","partition":2,"ranges":[{"start":100,"end":250},{"start":300,"end":350}],'
        '"reason":"gap found by the quality run","restart_live":false}'
    )
    assert RecoveryRequest.decode(REQUEST.encode()) == REQUEST
    stalled = RecoveryRequest("telemetry", 2, [OffsetRange(0, 10)], "STOP", restart_live=True)
    assert stalled.ranges == (OffsetRange(0, 10),)
    assert RecoveryRequest.decode(stalled.encode()).restart_live is True


@pytest.mark.parametrize(
    "change, param, message",
    [
        ({"partition": "2"}, "partition", r"Expected `int`, got `str` - at `\$\.partition`"),
        ({"ranges": [[100, 250]]}, "ranges", r"Expected `object`, got `array` - at `\$\.ranges\[0\]`"),
        ({"ranges": [{"start": 250, "end": 100}]}, "ranges", r"offset range \[250, 100\): start must be before end"),
        ({"ranges": []}, "request", r"at least one offset range"),
        ({"restart_live": "yes"}, "restart_live", r"Expected `bool`, got `str`"),
        ({"reason": None}, "reason", r"Expected `str`, got `null`"),
        ({"resaon": "typo"}, "resaon", r"unknown field `resaon`"),
    ],
)
def test_a_bad_request_fails_naming_the_field(change, param, message):
    with pytest.raises(RecoveryRequestError, match=message) as raised:
        RecoveryRequest.from_json({**DOCUMENT, **change})
    assert raised.value.param == param
    assert str(raised.value).startswith(f"param {param!r}: ")


def test_a_request_missing_a_field_or_not_json_fails_naming_it():
    document = {k: v for k, v in DOCUMENT.items() if k != "ranges"}
    with pytest.raises(RecoveryRequestError, match=r"^param 'ranges': Object missing required field `ranges`$"):
        RecoveryRequest.from_json(document)
    with pytest.raises(RecoveryRequestError, match=r"^param 'request': not a recovery request's JSON"):
        RecoveryRequest.decode("partition=2")


def test_the_configuration_decides_which_streams_and_partitions_exist():
    assert check_recovery_request(REQUEST, STREAMS) is REQUEST
    with pytest.raises(
        RecoveryRequestError, match=r"^param 'stream': unknown stream 'orders'; configured streams: clicks, telemetry$"
    ):
        check_recovery_request(RecoveryRequest.from_json({**DOCUMENT, "stream": "orders"}), STREAMS)
    with pytest.raises(
        RecoveryRequestError,
        match=r"^param 'partition': partition 4 is outside \[0, 4\): stream 'telemetry' has 4 partitions$",
    ):
        check_recovery_request(RecoveryRequest.from_json({**DOCUMENT, "partition": 4}), STREAMS)


def test_the_recover_dag_takes_a_request_from_the_quality_dag_or_a_person_the_same_way():
    assert recovery_request_from_params(DOCUMENT, STREAMS) == REQUEST
    typed = _form(partition="2", ranges="300-350, 100-200,200-250", restart_live=False)
    assert recovery_request_from_params(typed, STREAMS) == REQUEST
    with pytest.raises(RecoveryRequestError, match=r"^param 'partition': partition 9 is outside"):
        recovery_request_from_params({**DOCUMENT, "partition": 9}, STREAMS)


@pytest.mark.parametrize(
    "ranges", ["300-350, 100-200,200-250", " 100 - 200 ,200-250,300-350,"], ids=["text", "text-with-spaces"]
)
def test_ranges_typed_by_a_person_come_out_sorted_and_merged(ranges):
    assert parse_recovery_form(_form(ranges=ranges), STREAMS) == REQUEST


def test_partition_as_numeric_text_reason_trimmed_and_restart_live_chosen():
    request = parse_recovery_form(
        _form(partition=" 3 ", reason="  replay after the broker outage \n", restart_live=True), STREAMS
    )
    assert (request.partition, request.reason, request.restart_live) == (3, "replay after the broker outage", True)
    assert parse_recovery_form(_form(), STREAMS).restart_live is False


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"stream": "orders"}, r"^param 'stream': unknown stream 'orders'; configured streams: clicks, telemetry$"),
        ({"stream": None}, r"^param 'stream': required: one of clicks, telemetry$"),
        ({"partition": "two"}, r"^param 'partition': expected a whole number, got 'two'$"),
        ({"partition": 1.0}, r"^param 'partition': expected a whole number, got 1\.0$"),
        ({"partition": True}, r"^param 'partition': expected a whole number, got True$"),
        ({"partition": None}, r"^param 'partition': required$"),
        (
            {"partition": 4},
            r"^param 'partition': partition 4 is outside \[0, 4\): stream 'telemetry' has 4 partitions$",
        ),
        ({"partition": "-1"}, r"^param 'partition': partition -1 is outside \[0, 4\)"),
        ({"ranges": "100-2x0"}, r"^param 'ranges': '100-2x0' is not start-end with whole-number offsets"),
        ({"ranges": "-5-10"}, r"^param 'ranges': -5-10: offsets are never negative$"),
        ({"ranges": "300-200"}, r"^param 'ranges': 300-200: start after end"),
        ({"ranges": "200-200"}, r"^param 'ranges': 200-200: start after end"),
        ({"ranges": " , "}, r"^param 'ranges': no ranges given"),
        ({"ranges": None}, r"^param 'ranges': required"),
        ({"ranges": 100}, r"^param 'ranges': expected text like 100-200,300-350, got int$"),
        (
            {"ranges": "100-200,150-160"},
            r"^param 'ranges': \[100, 200\) and \[150, 160\) overlap; list each offset once$",
        ),
        ({"ranges": "0-10,10-20,15-30"}, r"^param 'ranges': \[10, 20\) and \[15, 30\) overlap"),
        ({"reason": "   "}, r"^param 'reason': say why this recovery runs"),
        ({"reason": None}, r"^param 'reason': say why this recovery runs"),
        ({"reason": "x" * 501}, r"^param 'reason': 501 characters; at most 500$"),
        ({"restart_live": "true"}, r"^param 'restart_live': true or false, got 'true'$"),
    ],
)
def test_bad_form_params_fail_naming_the_param(overrides, message):
    with pytest.raises(RecoveryRequestError, match=message) as raised:
        parse_recovery_form(_form(**overrides), STREAMS)
    assert raised.value.param == next(iter(overrides))


def test_a_reason_of_exactly_500_characters_is_accepted():
    assert len(parse_recovery_form(_form(reason="y" * 500), STREAMS).reason) == 500


def test_a_request_refuses_ranges_out_of_canonical_order_and_an_empty_reason():
    with pytest.raises(ValueError, match="sorted, disjoint and merged"):
        RecoveryRequest("telemetry", 0, (OffsetRange(10, 20), OffsetRange(20, 30)), "adjacent, not merged")
    with pytest.raises(ValueError, match="at least one offset range"):
        RecoveryRequest("telemetry", 0, (), "nothing")
    with pytest.raises(ValueError, match="reason: 1 to 500 characters, got 0"):
        RecoveryRequest("telemetry", 0, (OffsetRange(0, 1),), " ")


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
