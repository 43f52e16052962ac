"""A run of the offline-device detector, from the DAG's params or the job's arguments."""

import pytest

from tidemark.offline_devices_request import (
    OfflineDevicesRequest,
    OfflineDevicesRequestError,
    backfill_table,
    parse_offline_devices_request,
)

START = 1_795_269_600_000  # 2026-11-21T14:00:00Z
END = 1_795_291_200_000  # 2026-11-21T20:00:00Z


@pytest.mark.parametrize("params", [{}, {"start": None, "end": None}, {"start": "", "end": " ", "output": ""}])
def test_no_range_is_a_live_run(params):
    assert parse_offline_devices_request(params) == OfflineDevicesRequest("live")


def test_a_range_is_a_backfill():
    request = parse_offline_devices_request(
        {"start": "2026-11-21T14:00:00Z", "end": "2026-11-21T21:00:00+01:00", "output": " /lake/x "}
    )
    assert request == OfflineDevicesRequest("backfill", START, END, "/lake/x")
    assert request.to_json() == {"mode": "backfill", "start_ms": START, "end_ms": END, "output": "/lake/x"}


@pytest.mark.parametrize(
    "params, param, reason",
    [
        ({"start": "2026-11-21T14:00:00Z"}, "end", "a backfill needs both start and end"),
        ({"end": "2026-11-21T14:00:00Z"}, "start", "a backfill needs both start and end"),
        ({"start": "2026-11-21T14:00:00", "end": "2026-11-21T20:00:00Z"}, "start", "has no UTC offset"),
        ({"start": "yesterday", "end": "2026-11-21T20:00:00Z"}, "start", "is not an ISO-8601 time"),
        ({"start": 1795269600000, "end": "2026-11-21T20:00:00Z"}, "start", "expected an ISO-8601 UTC time"),
        ({"start": "2026-11-21T20:00:00Z", "end": "2026-11-21T20:00:00Z"}, "end", "must be after start"),
        ({"output": "/lake/x"}, "output", "only a backfill takes an output path"),
        ({"start": "2026-11-21T14:00:00Z", "end": "2026-11-21T20:00:00Z", "output": 3}, "output", "expected a path"),
    ],
)
def test_a_bad_param_fails_naming_it(params, param, reason):
    with pytest.raises(OfflineDevicesRequestError) as error:
        parse_offline_devices_request(params)
    assert error.value.param == param
    assert str(error.value).startswith(f"param {param!r}: ")
    assert reason in str(error.value)


def test_the_default_backfill_table_names_its_range():
    assert backfill_table(START, END) == "offline_devices_backfill/20261121T1400Z_20261121T2000Z"
    assert backfill_table(START + 1_500, END) == "offline_devices_backfill/20261121T140001.500Z_20261121T2000Z"
