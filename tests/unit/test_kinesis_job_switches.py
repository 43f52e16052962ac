"""What the persist job decides about a Kinesis stream before any work: an unsupported start is
refused naming the key, and the throttling chaos switch is read for its stream only."""

from __future__ import annotations

import pytest
from test_kinesis_stream_config import _document, _load, _source_with

from spark_jobs.persist.pipeline import check_source_supported, throttling_from_environment


def _rides(tmp_path, **source):
    return _load(tmp_path, _document(_source_with(**source)))["rides"]


def test_starting_from_the_tip_is_refused_naming_the_key_and_the_oldest_records_are_not(tmp_path):
    with pytest.raises(ValueError, match=r"streams\.rides\.source\.starting_position: 'latest'"):
        check_source_supported(_rides(tmp_path, starting_position="latest"))
    check_source_supported(_rides(tmp_path))  # trim_horizon, the default


def test_the_throttling_switch_applies_to_its_stream_only_and_a_bad_value_is_named(tmp_path):
    rides = _rides(tmp_path)
    assert throttling_from_environment(rides, {}) == 0.0
    assert throttling_from_environment(rides, {"TIDEMARK_CHAOS_THROTTLE": "rides:0.5"}) == 0.5
    assert throttling_from_environment(rides, {"TIDEMARK_CHAOS_THROTTLE": "telemetry:0.5"}) == 0.0
    for bad in ("rides:1.0", "rides:half", "rides"):
        with pytest.raises(ValueError, match="TIDEMARK_CHAOS_THROTTLE"):
            throttling_from_environment(rides, {"TIDEMARK_CHAOS_THROTTLE": bad})
