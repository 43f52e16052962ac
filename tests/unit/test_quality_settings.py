"""The optional quality: section of a stream: defaults, the shipped values, and bad values naming the key."""

from pathlib import Path

import msgspec
import pytest
import yaml

from tidemark.stall_rules import StallRules
from tidemark.stream_config import (
    KafkaSource,
    LakeLocation,
    QualitySettings,
    StreamConfig,
    StreamConfigError,
    load_stream,
    load_streams,
)

REPO = Path(__file__).resolve().parents[2]
ENV = {"TIDEMARK_LAKE_ROOT": "/lake", "TIDEMARK_CHECKPOINT_ROOT": "/checkpoints"}
MINUTE = 60_000

DEFAULTS = QualitySettings(
    schedule="*/10 * * * *",
    stall_window=6,
    stall_timeout_ms=30 * MINUTE,
    max_partition_lag_ms=60 * MINUTE,
    event_time_gap_ms=30 * MINUTE,
    max_late_per_hour=1000,
    max_quarantined_per_hour=100,
    history_hours=24,
    sweep_schedule="40 */6 * * *",
)


def _shipped() -> dict:
    return yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())


def _load_telemetry(tmp_path, document) -> StreamConfig:
    path = tmp_path / "streams.yaml"
    path.write_text(yaml.safe_dump(document))
    return load_streams(path, ENV)["telemetry"]


def test_the_dataclass_defaults_are_the_documented_ones():
    assert QualitySettings() == DEFAULTS


def test_the_shipped_file_states_the_defaults_but_the_demos_stall_thresholds():
    shipped = load_stream(REPO / "conf" / "streams.yaml", "telemetry", ENV)
    # Shortened for `tidemark demo --incident`, longer than the persist schedule's 2 minutes.
    assert shipped.quality == msgspec.structs.replace(DEFAULTS, stall_window=2, stall_timeout_ms=3 * MINUTE)
    assert shipped.persist.schedule == "*/2 * * * *"


def test_a_stream_without_the_section_or_with_an_empty_one_gets_the_defaults(tmp_path):
    document = _shipped()
    del document["streams"]["telemetry"]["quality"]
    assert _load_telemetry(tmp_path, document).quality == DEFAULTS
    document["streams"]["telemetry"]["quality"] = None
    assert _load_telemetry(tmp_path, document).quality == DEFAULTS


def test_every_key_is_read(tmp_path):
    document = _shipped()
    document["streams"]["telemetry"]["quality"] = {
        "schedule": "0 * * * *",
        "stall_window": 2,
        "stall_timeout": "45m",
        "max_partition_lag": "2h",
        "event_time_gap": "90s",
        "max_late_per_hour": 0,
        "max_quarantined_per_hour": "7",
        "history_hours": 1,
        "sweep_schedule": "15 4 * * *",
    }
    assert _load_telemetry(tmp_path, document).quality == QualitySettings(
        schedule="0 * * * *",
        stall_window=2,
        stall_timeout_ms=45 * MINUTE,
        max_partition_lag_ms=120 * MINUTE,
        event_time_gap_ms=90_000,
        max_late_per_hour=0,
        max_quarantined_per_hour=7,
        history_hours=1,
        sweep_schedule="15 4 * * *",
    )


def test_stall_rules_carry_the_window_and_the_durations():
    settings = QualitySettings(stall_window=9, stall_timeout_ms=5 * MINUTE, max_partition_lag_ms=7 * MINUTE)
    assert settings.stall_rules() == StallRules(window=9, stall_timeout_ms=5 * MINUTE, max_partition_lag_ms=7 * MINUTE)


def test_existing_constructors_keep_working_without_quality():
    stream = load_stream(REPO / "conf" / "streams.yaml", "telemetry", ENV)
    rebuilt = StreamConfig(
        stream.name, stream.source, stream.payload, stream.event_time, stream.lake, stream.retention_ms, stream.persist
    )
    assert rebuilt.quality == QualitySettings()
    assert isinstance(rebuilt.source, KafkaSource) and isinstance(rebuilt.lake, LakeLocation)


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("stall_window", 1, r"quality\.stall_window: expected a whole number >= 2, got 1"),
        ("stall_window", "six", r"quality\.stall_window: expected a whole number >= 2, got 'six'"),
        ("stall_window", True, r"quality\.stall_window: expected a whole number >= 2, got True"),
        ("stall_timeout", "0s", r"quality\.stall_timeout: must be greater than zero"),
        ("stall_timeout", "30", r"quality\.stall_timeout: a bare number is ambiguous"),
        ("max_partition_lag", "an hour", r"quality\.max_partition_lag: expected a non-negative duration"),
        ("event_time_gap", "0m", r"quality\.event_time_gap: must be greater than zero"),
        ("max_late_per_hour", -1, r"quality\.max_late_per_hour: expected a whole number >= 0, got -1"),
        ("max_quarantined_per_hour", 2.5, r"quality\.max_quarantined_per_hour: expected a whole number >= 0"),
        ("history_hours", 0, r"quality\.history_hours: expected a whole number >= 1, got 0"),
        ("schedule", "  ", r"quality\.schedule: expected a cron expression like '\*/10 \* \* \* \*', got ''"),
        ("sweep_schedule", "daily", r"quality\.sweep_schedule: 'daily' is not a cron expression \("),
        ("stall_windwo", 6, r"quality\.stall_windwo: unknown key; expected one of"),
    ],
)
def test_bad_value_fails_naming_the_key(tmp_path, key, value, message):
    document = _shipped()
    document["streams"]["telemetry"]["quality"][key] = value
    with pytest.raises(StreamConfigError, match=r"streams\.telemetry\." + message):
        _load_telemetry(tmp_path, document)


def test_the_section_must_be_a_mapping(tmp_path):
    document = _shipped()
    document["streams"]["telemetry"]["quality"] = ["stall_window", 6]
    with pytest.raises(StreamConfigError, match=r"streams\.telemetry\.quality: expected a mapping of keys, got list"):
        _load_telemetry(tmp_path, document)
