"""The optional offline_devices: section of a stream: defaults, the shipped values, and bad values naming the key."""

from pathlib import Path

import pytest
import yaml

from tidemark.stream_config import OfflineDevicesSettings, StreamConfigError, load_stream, load_streams

REPO = Path(__file__).resolve().parents[2]
ENV = {"TIDEMARK_LAKE_ROOT": "/lake", "TIDEMARK_CHECKPOINT_ROOT": "/checkpoints"}
MINUTE = 60_000

DEFAULTS = OfflineDevicesSettings(
    device_field="device_id", offline_after_ms=30 * MINUTE, live_slice_ms=15 * MINUTE, backfill_slice_ms=6 * 60 * MINUTE
)


def _shipped() -> dict:
    return yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())


def _load(tmp_path, document):
    path = tmp_path / "streams.yaml"
    path.write_text(yaml.safe_dump(document))
    return load_streams(path, ENV)["telemetry"]


def _with_section(section) -> dict:
    document = _shipped()
    document["streams"]["telemetry"]["offline_devices"] = section
    return document


def test_the_dataclass_defaults_are_the_documented_ones():
    assert OfflineDevicesSettings() == DEFAULTS


def test_the_shipped_telemetry_stream_has_the_detector_with_the_defaults():
    assert load_stream(REPO / "conf" / "streams.yaml", "telemetry", ENV).offline_devices == DEFAULTS


def test_without_the_section_the_stream_has_no_detector(tmp_path):
    document = _shipped()
    del document["streams"]["telemetry"]["offline_devices"]
    assert _load(tmp_path, document).offline_devices is None


def test_an_empty_section_enables_the_detector_with_the_defaults(tmp_path):
    assert _load(tmp_path, _with_section(None)).offline_devices == DEFAULTS


def test_every_key_is_read(tmp_path):
    section = {"device_field": "battery", "offline_after": "2h", "live_slice": "5m", "backfill_slice": "1d"}
    assert _load(tmp_path, _with_section(section)).offline_devices == OfflineDevicesSettings(
        "battery", 2 * 60 * MINUTE, 5 * MINUTE, 24 * 60 * MINUTE
    )


@pytest.mark.parametrize(
    "section, key, reason",
    [
        # (safe_dump sorts the keys: the fields are declared in this order here)
        (
            {"device_field": "scooter"},
            "device_field",
            "'scooter' is not a payload field; declared: battery, device_id, lat, lon",
        ),
        ({"device_field": "lat"}, "device_field", "'lat' is a double; a device id is a string, long or int"),
        ({"device_field": "event_time"}, "device_field", "'event_time' is not a payload field"),
        ({"offline_after": "0s"}, "offline_after", "must be greater than zero"),
        ({"offline_after": "30"}, "offline_after", "a bare number is ambiguous"),
        ({"live_slice": "10s"}, "live_slice", "10s is shorter than 1m"),
        ({"backfill_slice": "soon"}, "backfill_slice", "expected a non-negative duration"),
        ({"offline_afer": "30m"}, "offline_afer", "unknown key"),
        ("yes", "", "expected a mapping of keys"),
    ],
)
def test_a_bad_value_fails_naming_the_key(tmp_path, section, key, reason):
    with pytest.raises(StreamConfigError) as error:
        _load(tmp_path, _with_section(section))
    where = "streams.telemetry.offline_devices" + (f".{key}" if key else "")
    assert f"{where}: {reason}" in str(error.value)
