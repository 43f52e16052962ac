"""The optional ``backfill:`` section: the daily reconciliation's schedule."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tidemark.stream_config import BackfillSettings, StreamConfigError, load_stream

REPO = Path(__file__).resolve().parents[2]
ENV = {"TIDEMARK_LAKE_ROOT": "/lake", "TIDEMARK_CHECKPOINT_ROOT": "/checkpoints"}


def _load(tmp_path, backfill):
    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    if backfill is None:
        document["streams"]["telemetry"].pop("backfill", None)
    else:
        document["streams"]["telemetry"]["backfill"] = backfill
    path = tmp_path / "streams.yaml"
    path.write_text(yaml.safe_dump(document))
    return load_stream(path, "telemetry", ENV)


def test_the_shipped_config_and_a_missing_section_reconcile_daily_at_0230_utc(tmp_path):
    assert load_stream(REPO / "conf" / "streams.yaml", "telemetry", ENV).backfill == BackfillSettings("30 2 * * *")
    assert _load(tmp_path, None).backfill == BackfillSettings("30 2 * * *")
    assert _load(tmp_path, {"reconcile_schedule": "0 4 * * 1"}).backfill.reconcile_schedule == "0 4 * * 1"


@pytest.mark.parametrize(
    "section, message",
    [
        ({"reconcile_schedule": "daily"}, r"backfill\.reconcile_schedule: 'daily' is not a cron expression \("),
        ({"reconcile_schedul": "30 2 * * *"}, r"backfill.*reconcile_schedul"),
    ],
)
def test_a_bad_section_fails_naming_the_key(tmp_path, section, message):
    with pytest.raises(StreamConfigError, match=message):
        _load(tmp_path, section)
