"""The offline-device detector's result is one Struct (tidemark.offline_devices_result): written by
the job, read back by the operator and the demo, its optional fields explicit, never "None" in a
sentence for a person, and a file that is not one refused naming it and the field."""

from __future__ import annotations

import json

import pytest

from tidemark.offline_devices_result import OfflineDevicesResult, OfflineDevicesResultError


def result(**changes) -> OfflineDevicesResult:
    fields = {
        "stream": "telemetry",
        "mode": "backfill",
        "query_id": "q",
        "output": "/lake/x",
        "batches": 3,
        "slices": 2,
        "records": 1200,
        "periods_opened": 3,
        "periods_closed": 2,
        "read_until": "2026-11-21T20:00:00.000Z",
        "horizon": "2026-11-21T22:00:00.000Z",
        "watermark": "2026-11-21T19:59:59.999Z",
    }
    return OfflineDevicesResult(**{**fields, **changes})


def test_the_file_the_job_writes_reads_back_as_the_same_value_in_the_shape_it_had(tmp_path):
    written = result(cut_at_horizon=True)
    path = tmp_path / "folder" / "result.json"
    written.write(path)

    assert OfflineDevicesResult.read(path) == written
    assert json.loads(path.read_text()) == {
        "stream": "telemetry",
        "mode": "backfill",
        "query_id": "q",
        "output": "/lake/x",
        "batches": 3,
        "slices": 2,
        "records": 1200,
        "periods_opened": 3,
        "periods_closed": 2,
        "read_until": "2026-11-21T20:00:00.000Z",
        "horizon": "2026-11-21T22:00:00.000Z",
        "watermark": "2026-11-21T19:59:59.999Z",
        "cut_at_horizon": True,
        "rebuilt_after_erasure": False,
    }
    assert OfflineDevicesResult.of(written.to_json(), "an XCom") == written


def test_a_result_written_before_cut_at_horizon_was_always_there_reads_as_not_cut(tmp_path):
    path = tmp_path / "result.json"
    path.write_text(json.dumps({k: v for k, v in result().to_json().items() if k != "cut_at_horizon"}))

    assert OfflineDevicesResult.read(path).cut_at_horizon is False


def test_what_was_read_is_said_in_words_and_none_is_never_printed():
    assert result().describe() == (
        "2 slices, 1200 records read up to 2026-11-21T20:00:00.000Z (horizon 2026-11-21T22:00:00.000Z); "
        "3 periods opened, 2 closed; output /lake/x"
    )
    nothing = result(
        mode="live",
        slices=0,
        records=0,
        periods_opened=0,
        periods_closed=0,
        read_until=None,
        horizon=None,
        watermark=None,
    ).describe()
    assert nothing == (
        "0 slices, 0 records read; the detector has read nothing yet (no hour sealed yet); "
        "0 periods opened, 0 closed; output /lake/x"
    )
    assert "None" not in nothing


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("{", "is not an offline-device detector result tidemark can read"),
        (json.dumps({**result().to_json(), "read_until": 1795291200000}), r"Expected `str \| null`, got `int`"),
        (json.dumps({**result().to_json(), "mode": "sometimes"}), r"Invalid enum value 'sometimes' - at `\$.mode`"),
        (json.dumps({"slices": 2, "records": 1200}), r"missing required field `stream`"),
        (json.dumps({**result().to_json(), "extra": 1}), r"unknown field `extra`"),
    ],
)
def test_a_file_that_is_not_a_result_is_refused_naming_it_and_the_field(tmp_path, text, complaint):
    path = tmp_path / "result.json"
    path.write_text(text)

    with pytest.raises(OfflineDevicesResultError, match=complaint) as raised:
        OfflineDevicesResult.read(path)
    assert str(raised.value).startswith(f"{path} is not an offline-device detector result tidemark can read (")


def test_a_missing_file_is_refused_naming_it(tmp_path):
    with pytest.raises(OfflineDevicesResultError, match=f"{tmp_path / 'none.json'}: cannot read"):
        OfflineDevicesResult.read(tmp_path / "none.json")
