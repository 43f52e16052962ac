"""A quarantine re-drive's decisions without Spark: the request a person types, and where each
quarantined record goes once the contract is fixed (events, late under its G, or still refused)."""

from __future__ import annotations

import pytest

from tidemark.lateness import LatenessClassifier
from tidemark.quarantine_redrive import QuarantinedRecord, redrive
from tidemark.record_decoder import RecordDecoder
from tidemark.redrive_request import RedriveRequest, RedriveRequestError, parse_redrive_form
from tidemark.stream_config import PayloadField, PayloadSchema

HOUR = 3_600_000
H = 1_795_842_000_000  # 2026-11-28T05:00Z
FIXED = PayloadSchema(
    event_time_field="event_time",
    event_time_format="epoch_millis",
    fields=(PayloadField("device_id", "string"), PayloadField("firmware", "string", required=False)),
)


def record(offset: int, value: bytes, partition: int = 0) -> QuarantinedRecord:
    return QuarantinedRecord(partition, offset, H, b"k", (("trace_id", b"t"),), value, 3, H + 2 * HOUR)


def test_records_that_now_decode_go_to_events_or_to_late_under_their_g_and_the_rest_stay():
    records = [
        record(10, b'{"device_id": "d", "event_time": %d}' % (H + 5)),  # its hour still open under G
        record(11, b'{"device_id": "d", "event_time": %d}' % (H - 3 * HOUR)),  # behind G - lateness: late
        record(12, b'{"device_id": 7, "event_time": %d}' % H),  # still the wrong type
        record(13, b"{broken"),
        record(0, b'{"device_id": "d", "event_time": %d}' % (H - 3 * HOUR), partition=1),  # no G there: on time
    ]
    g = {0: H, 1: None}
    decided = redrive(records, RecordDecoder(FIXED, HOUR), lambda p, o: g[p], LatenessClassifier(10 * 60_000))
    assert [m.record.position for m in decided.events] == [10, 0]
    assert [(m.record.position, m.global_watermark_ms) for m in decided.late] == [(11, H)]
    assert dict(decided.still_refused) == {"wrong_type": 1, "malformed_json": 1}
    assert decided.events[0].event.values == {"device_id": "d", "firmware": None}


def test_a_record_an_erasure_names_is_left_out_once_it_decodes():
    from tidemark.erasure_predicate import parse_predicate

    erasure = parse_predicate("device_id = 'gone'", FIXED.columns)
    records = [
        record(30, b'{"device_id": "gone", "event_time": %d}' % H),  # named by the predicate
        record(31, b'{"device_id": "kept", "event_time": %d}' % H),  # its position is erased
        record(32, b'{"device_id": "kept", "event_time": %d}' % H),
    ]

    decided = redrive(
        records,
        RecordDecoder(FIXED, HOUR),
        lambda p, o: None,
        LatenessClassifier(0),
        lambda r, event: r.position == 31 or erasure.matches(event.values),
    )

    assert [m.record.position for m in decided.events] == [32] and decided.erased == 2


def test_the_future_guard_judges_a_record_at_the_time_it_was_first_read():
    ahead = record(20, b'{"device_id": "d", "event_time": %d}' % (H + 2 * HOUR + 30 * 60_000))
    decided = redrive([ahead], RecordDecoder(FIXED, HOUR), lambda p, o: None, LatenessClassifier(0))
    assert len(decided.events) == 1, "30 min ahead of its first read time is within the hour of skew"
    far = record(21, b'{"device_id": "d", "event_time": %d}' % (H + 4 * HOUR))
    assert dict(redrive([far], RecordDecoder(FIXED, HOUR), lambda p, o: None, LatenessClassifier(0)).still_refused) == {
        "future_event_time": 1
    }


def test_the_form_becomes_one_request_and_each_bad_param_is_named():
    streams = {"telemetry": object()}
    request = parse_redrive_form(
        {"stream": "telemetry", "reason": "unknown_schema_id", "hours": "2026-11-28T05:00Z..2026-11-28T08:00+00:00"},
        streams,
    )
    assert request == RedriveRequest(
        "telemetry", "unknown_schema_id", "2026-11-28T05:00:00.000Z", "2026-11-28T08:00:00.000Z"
    )
    assert request.window_ms() == (H, H + 3 * HOUR)
    assert RedriveRequest.decode(request.encode()) == request
    assert (
        parse_redrive_form({"stream": "telemetry", "reason": "missing_field", "hours": ""}, streams).window_ms() is None
    )
    cases = [
        ({"stream": "rides", "reason": "x"}, "stream", "unknown stream 'rides'"),
        ({"stream": "telemetry", "reason": "Bad Reason"}, "reason", "a quarantine reason code"),
        ({"stream": "telemetry", "reason": "x", "hours": "2026-11-28T05:00Z"}, "hours", '"FROM..TO"'),
        (
            {"stream": "telemetry", "reason": "x", "hours": "2026-11-28T05:30Z..2026-11-28T08:00Z"},
            "hours",
            "whole hour",
        ),
        ({"stream": "telemetry", "reason": "x", "hours": "2026-11-28T08:00Z..2026-11-28T05:00Z"}, "hours", "before TO"),
        ({"stream": "telemetry", "reason": "x", "hours": "2026-11-28T05:00..2026-11-28T08:00Z"}, "hours", "offset"),
    ]
    for params, param, says in cases:
        with pytest.raises(RedriveRequestError, match=rf"^param '{param}': .*{says}"):
            parse_redrive_form(params, streams)
    with pytest.raises(RedriveRequestError, match=r"^param 'hours_to'|^param 'request'"):
        RedriveRequest.from_json({"stream": "telemetry", "reason": "x", "hours_from": "2026-11-28T05:00:00.000Z"})
