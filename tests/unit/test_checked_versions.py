"""The memory of which Delta versions the checks read (expectations.checked_versions), and which
hours the sweep re-checks (expectations.damage_scan.sweep_hours)."""

from __future__ import annotations

import pytest

from expectations.checked_versions import (
    CheckedVersions,
    CheckedVersionsUnreadable,
    checked_versions_path,
    read_checked_versions,
    write_checked_versions,
)
from expectations.damage_scan import sweep_hours

HOUR = 3_600_000
DAY = 24 * HOUR


def test_the_state_is_written_atomically_next_to_the_hour_reports_and_read_back(tmp_path):
    state = CheckedVersions("telemetry", {"events": 41, "late": 12, "quarantine": 3}, "run-1", 1_795_309_200_000)
    path = write_checked_versions(tmp_path, state)
    assert path == tmp_path / "telemetry" / "checked_versions.json" == checked_versions_path(tmp_path, "telemetry")
    assert read_checked_versions(tmp_path, "telemetry") == state
    assert sorted(p.name for p in path.parent.iterdir()) == ["checked_versions.json"], "no partial file left"
    assert read_checked_versions(tmp_path, "other") is None, "no state yet: the run starts from the newest versions"


@pytest.mark.parametrize(
    "text, says",
    [
        (
            '{"stream": "telemetry", "versions": {"events": "41"}, "run_name": "r", "checked_at_ms": 1}',
            "Expected `int`",
        ),
        ('{"stream": "telemetry", "versions": {}, "run_name": "r", "checked_at_ms": 1, "extra": 1}', "unknown field"),
        ('{"stream": "telem', "truncated"),
        ('{"stream": "billing", "versions": {}, "run_name": "r", "checked_at_ms": 1}', "written for stream 'billing'"),
    ],
)
def test_a_state_file_that_cannot_be_trusted_is_named_with_what_is_wrong(tmp_path, text, says):
    path = checked_versions_path(tmp_path, "telemetry")
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with pytest.raises(CheckedVersionsUnreadable) as raised:
        read_checked_versions(tmp_path, "telemetry")
    assert str(raised.value).startswith(str(path)) and says in str(raised.value)


def test_the_sweep_rechecks_every_sealed_hour_the_source_log_still_retains():
    now = 100 * DAY + 30 * 60_000
    sealed = [now - 30 * 60_000 - back * HOUR for back in range(1, 200)]  # hourly, from 1 h to 199 h back
    swept = sweep_hours(sealed, now, 7 * DAY)
    assert swept == sorted(h for h in sealed if h + HOUR > now - 7 * DAY)
    assert len(swept) == 168, "seven days of hours: the one that started 168.5 h ago still ends inside retention"
    assert sweep_hours([], now, 7 * DAY) == []
