"""Lake maintenance decided without Spark: which hours are compacted (tidemark.compaction_plan),
the VACUUM rule of the ``maintenance:`` section (tidemark.maintenance_settings), and the run's
one-line summary (tidemark.maintenance_result)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tidemark.compaction_plan import HOUR_MS, hours_to_compact
from tidemark.maintenance_result import CompactedHours, CompactedTable, MaintenanceResult, SettledClaims, VacuumedTable
from tidemark.maintenance_settings import MaintenanceSettings
from tidemark.stream_config import StreamConfigError, load_streams

REPO = Path(__file__).resolve().parents[2]
ENV = {"TIDEMARK_LAKE_ROOT": "/l", "TIDEMARK_CHECKPOINT_ROOT": "/c"}
H0 = 1_795_568_400_000  # an hour's start, ms UTC


def _maintenance(tmp_path, section):
    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    if section is not ...:
        document["streams"]["telemetry"]["maintenance"] = section
    path = tmp_path / "streams.yaml"
    path.write_text(yaml.safe_dump(document))
    return load_streams(path, ENV)["telemetry"].maintenance


def test_only_sealed_hours_with_enough_files_are_compacted_oldest_first():
    files = {H0: 12, H0 + HOUR_MS: 3, H0 + 2 * HOUR_MS: 4, H0 + 3 * HOUR_MS: 40}
    sealed = [H0, H0 + HOUR_MS, H0 + 2 * HOUR_MS]  # the newest hour is still being written

    assert hours_to_compact(files, sealed, min_files=4) == [H0, H0 + 2 * HOUR_MS]
    assert hours_to_compact(files, [], min_files=2) == [], "nothing sealed: nothing compacted"
    assert hours_to_compact({}, sealed, min_files=2) == []


def test_the_section_s_defaults_are_delta_s_retention_and_a_six_hour_reader_bound(tmp_path):
    assert _maintenance(tmp_path, ...) == MaintenanceSettings(
        schedule="15 * * * *", compact_min_files=4, reader_timeout_ms=6 * HOUR_MS, vacuum_retain_ms=7 * 24 * HOUR_MS
    )
    assert _maintenance(tmp_path, {"vacuum_retain": "2h", "reader_timeout": "90m"}).vacuum_retain_ms == 2 * HOUR_MS


@pytest.mark.parametrize(
    ("section", "message"),
    [
        (
            {"vacuum_retain": "6h"},
            r"streams\.telemetry\.maintenance\.vacuum_retain: 6h is not longer than maintenance\.reader_timeout 6h: "
            r"VACUUM could delete a file a reader that is still running opened",
        ),
        (
            {"vacuum_retain": "1h", "reader_timeout": "2h"},
            r"streams\.telemetry\.maintenance\.vacuum_retain: 1h is not longer than maintenance\.reader_timeout 2h",
        ),
        ({"compact_min_files": 1}, r"streams\.telemetry\.maintenance\.compact_min_files: .*>= 2"),
        ({"schedule": "every hour"}, r"streams\.telemetry\.maintenance\.schedule"),
        ({"optimize": True}, r"streams\.telemetry\.maintenance\.optimize: unknown key"),
    ],
)
def test_a_vacuum_a_reader_could_outlive_or_a_bad_value_fails_loading_naming_the_key(tmp_path, section, message):
    with pytest.raises(StreamConfigError, match=message):
        _maintenance(tmp_path, section)


def test_the_summary_counts_what_the_commits_did():
    result = MaintenanceResult(
        "telemetry",
        (
            CompactedHours("2026-11-27", ("2026-11-27T08:00:00.000Z",), 12, 1),
            CompactedHours("2026-11-28", ("2026-11-28T08:00:00.000Z", "2026-11-28T09:00:00.000Z"), 5, 2, retries=1),
            CompactedHours("2026-11-29", ("2026-11-29T10:00:00.000Z",), 0, 0, retries=5, yielded=True),
        ),
        (VacuumedTable("events", 17), VacuumedTable("ledger", 3)),
        12.34,
        SettledClaims(claims_settled=9, claims_kept=1, settled_ranges=2, rows_before=21, rows_after=4, files=1),
        tables=(CompactedTable("ledger", 31, 1), CompactedTable("seals", 0, 0, retries=5, yielded=True)),
    )

    assert result.summary() == (
        "telemetry: 3 sealed hours compacted (17 files into 3), 1 left for the next run (a concurrent writer won "
        "every retry); ledger compacted (31 files into 1); seals left for the next run (a concurrent writer won "
        "every retry); 9 claims settled (21 rows into 4, 1 still held); VACUUM deleted 20 files in 2 tables; 12.3 s"
    )
    assert MaintenanceResult.from_json(result.to_json()) == result


def test_a_run_with_nothing_to_do_says_why_and_that_no_spark_job_started():
    result = MaintenanceResult("telemetry", seconds=0.31, nothing_to_do="no sealed hour to compact")

    assert result.summary() == "telemetry: nothing to do (no sealed hour to compact); looked in 0.3 s, no Spark job"
    assert MaintenanceResult.from_json(result.to_json()) == result
