"""Every schedule in a stream's configuration is a cron expression checked by croniter (the library
Airflow's timetables parse them with), not by counting its fields: a bad one fails at load time
naming its key, instead of when Airflow first parses the DAG or never."""

from pathlib import Path

import pytest
import yaml

from tidemark.stream_config import StreamConfigError, load_streams

REPO = Path(__file__).resolve().parents[2]
ENV = {"TIDEMARK_LAKE_ROOT": "/lake", "TIDEMARK_CHECKPOINT_ROOT": "/checkpoints"}
SCHEDULES = [
    ("persist", "schedule"),
    ("quality", "schedule"),
    ("quality", "sweep_schedule"),
    ("backfill", "reconcile_schedule"),
]


def _load(tmp_path, section, key, value):
    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    document["streams"]["telemetry"][section][key] = value
    path = tmp_path / "streams.yaml"
    path.write_text(yaml.safe_dump(document))
    return load_streams(path, ENV)["telemetry"]


@pytest.mark.parametrize("section, key", SCHEDULES)
@pytest.mark.parametrize(
    "expression",
    [
        "61 * * * *",  # five fields, but there is no minute 61
        "0 25 * * *",  # five fields, but there is no hour 25
        "*/10 * * * mon-fri-sat",  # five fields, the day-of-week range is not one
        "daily",  # not a cron expression at all (Airflow's preset is @daily)
    ],
)
def test_an_invalid_cron_expression_fails_naming_its_key(tmp_path, section, key, expression):
    with pytest.raises(StreamConfigError) as refused:
        _load(tmp_path, section, key, expression)
    assert f"streams.telemetry.{section}.{key}: {expression!r} is not a cron expression" in str(refused.value)


@pytest.mark.parametrize("section, key", SCHEDULES)
def test_a_seconds_field_is_refused_because_airflow_schedules_by_the_minute(tmp_path, section, key):
    with pytest.raises(StreamConfigError) as refused:
        _load(tmp_path, section, key, "0 */5 * * * 30")
    assert f"streams.telemetry.{section}.{key}: '0 */5 * * * 30' has more than five fields" in str(refused.value)


@pytest.mark.parametrize("section, key", SCHEDULES)
@pytest.mark.parametrize("expression", ["15 3 * * 1-5", "@hourly", "*/7 * * * *"])
def test_a_valid_expression_or_airflow_preset_is_kept_as_written(tmp_path, section, key, expression):
    stream = _load(tmp_path, section, key, expression)
    assert getattr(getattr(stream, section), key) == expression
