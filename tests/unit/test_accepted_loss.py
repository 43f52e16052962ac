"""The rules of an accepted loss (tidemark.accepted_loss): what may be accepted, what the live
job passes over, and that a second loss is never covered by the first."""

import pytest

from tidemark.accepted_loss import (
    AcceptedLoss,
    AcceptLostRefused,
    AcceptLostRequest,
    AcceptLostRequestError,
    check_acceptance,
    parse_accept_lost_form,
    passed_accepted,
    settle_losses,
)
from tidemark.retention_loss import LostRange

STREAMS = {"telemetry": object()}
KINESIS_SEQUENCE = 49_590_338_271_490_256_608_559_692_538_361_571_095_921_575_989_136_588_898


def _request(start=40, end=70, partition=1):
    return AcceptLostRequest("telemetry", partition, start, end, "alice", "copy gone")


def test_the_form_becomes_one_request_and_each_bad_param_is_named():
    form = {"stream": "telemetry", "partition": "1", "range": " 40 - 70 ", "reason": "copy gone"}
    assert parse_accept_lost_form(form, STREAMS, "alice") == _request()
    bad = [
        ({**form, "stream": "other"}, "alice", "stream"),
        ({**form, "partition": "-1"}, "alice", "partition"),
        ({**form, "range": "70-40"}, "alice", "range"),
        ({**form, "range": "40"}, "alice", "range"),
        ({**form, "range": "40-70,80-90"}, "alice", "range"),
        (form, "a:b", "by"),
        (form, "", "by"),
        ({**form, "reason": "x" * 501}, "alice", "reason"),
    ]
    for params, who, named in bad:
        with pytest.raises(AcceptLostRequestError) as raised:
            parse_accept_lost_form(params, STREAMS, who)
        assert raised.value.param == named


def test_a_request_crosses_processes_as_one_value_with_a_kinesis_sequence_number_exact():
    request = AcceptLostRequest("telemetry", 3, KINESIS_SEQUENCE, KINESIS_SEQUENCE + 10**20, "dag-run-7")
    assert AcceptLostRequest.decode(request.encode()) == request
    assert AcceptLostRequest.from_json(request.to_json()) == request
    with pytest.raises(AcceptLostRequestError) as raised:
        AcceptLostRequest.from_json({**request.to_json(), "end": KINESIS_SEQUENCE})
    assert "START < END" in str(raised.value)


def test_only_the_range_lost_at_the_live_position_now_is_accepted():
    lost = (LostRange(1, 40, 70),)
    assert check_acceptance(_request(), 40, lost, []) is True
    assert check_acceptance(_request(40, 60), 40, lost, []) is True, "the first part: the rest stops the job again"
    refusals = [
        (_request(41, 70), 40, lost, "accept --range 40-70"),
        (_request(40, 71), 40, lost, "reaches past what the log lost"),
        (_request(), 40, (), "nothing is lost"),
        (_request(), None, lost, "no live ledger row"),
        (_request(), 40, (LostRange(1, 40, None),), "shard's end"),
        (_request(), 40, (LostRange(0, 40, 70),), "nothing is lost"),
    ]
    for request, position, lost_now, said in refusals:
        with pytest.raises(AcceptLostRefused) as raised:
            check_acceptance(request, position, lost_now, [])
        assert said in str(raised.value)
        assert "nothing was written" in str(raised.value)


def test_the_same_range_again_writes_nothing_and_an_overlapping_one_is_refused():
    earlier = [AcceptedLoss(1, 40, 70, "bob", 1_764_000_000_000)]
    assert check_acceptance(_request(), 40, (LostRange(1, 40, 70),), earlier) is False
    with pytest.raises(AcceptLostRefused) as raised:
        check_acceptance(_request(60, 80), 60, (LostRange(1, 60, 80),), earlier)
    assert "offsets [40, 70) accepted as lost by bob at 2025-11-24T16:00:00.000Z" in str(raised.value)
    # Another partition's acceptance does not matter here.
    assert check_acceptance(_request(partition=2), 40, (LostRange(2, 40, 70),), earlier) is True


def test_the_live_job_passes_over_exactly_the_accepted_range_and_stops_for_anything_else():
    accepted = [(1, 40, 70)]
    assert settle_losses((LostRange(1, 40, 70),), accepted) == ({1: 70}, ())
    # Retention took more since: pass the accepted part; [70, 85) is a loss of its own at the next look.
    assert settle_losses((LostRange(1, 40, 85),), accepted) == ({1: 70}, ())
    # A later loss, at a position past the accepted range: never covered by it.
    assert settle_losses((LostRange(1, 100, 110),), accepted) == ({}, (LostRange(1, 100, 110),))
    # Another partition's loss stops the job; a shard that since lost everything after the
    # position passes the accepted part, and what lies beyond stops it at the next look.
    assert settle_losses((LostRange(0, 40, 70), LostRange(1, 40, None)), accepted) == ({1: 70}, (LostRange(0, 40, 70),))
    assert settle_losses((LostRange(1, 70, None),), accepted) == ({}, (LostRange(1, 70, None),))


def test_the_position_the_checks_judge_moves_past_a_chain_of_accepted_ranges_only_from_where_it_stands():
    accepted = [AcceptedLoss(1, 40, 70, "a", 0), AcceptedLoss(1, 70, 85, "b", 0), AcceptedLoss(1, 100, 110, "c", 0)]
    assert passed_accepted(40, accepted) == 85
    assert passed_accepted(90, accepted) == 90
    assert passed_accepted(100, accepted) == 110


def test_who_accepted_comes_back_from_the_ledger_row():
    loss = AcceptedLoss.from_ledger(1, 40, 70, AcceptedLoss.writer("telemetry", "alice"), 1_764_000_000_000)
    assert loss == AcceptedLoss(1, 40, 70, "alice", 1_764_000_000_000)
    assert loss.describe() == "offsets [40, 70) accepted as lost by alice at 2025-11-24T16:00:00.000Z"
