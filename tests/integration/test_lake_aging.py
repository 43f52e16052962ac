"""The lake after a few simulated days (issue 40): the aging benchmark's short version.

``benchmarks.lake_aging.age_lake`` builds two simulated days of the demo's four profiles (one
partition each, at 1% of their rates, every record stamped with its simulated event time),
persisted every 12 hours by the real persist job and maintained daily by the real maintenance
job, on the session's broker and Spark session. It measures on day 1 and day 2, right after that
day's maintenance run, what is counted (``timed=False``); what the runs cost in seconds is the
benchmark's to measure (docs/operations/lake-maintenance.md), never a test's. The rules day N
keeps against day 1:

- every sealed hour of events is one file after maintenance (the compaction keeps up);
- the quality run of the hours the next persist run sealed finds every partition OK and reads at
  most 1.2 times day 1's events files (the checked hours, their ``history_hours`` and the hours
  their ranges' records lie in, not the lake's age: before the ranges' event times bounded the
  read, a compacted hour's file, holding every partition, was read for any range);
- the persist look on the caught-up lake says nothing new, from the ledger's furthest rows;
- the ledger is one file after maintenance (compacted whole, as the seals);
- every record produced is in events, late or quarantine exactly once.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

from connectors.lake_storage import open_delta_table
from tidemark.stream_config import load_stream

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # benchmarks/ is scripts, not an installed package

from benchmarks.lake_aging import age_lake  # noqa: E402

pytestmark = pytest.mark.integration

DAYS = 2  # the fewest that compare day N with day 1; the benchmark ages 30 (about a minute a day)


def test_two_simulated_days_keep_what_day_one_costs(kafka_broker, spark, tmp_path):
    figures = age_lake(spark, kafka_broker, tmp_path, DAYS, 0.01, "0 */12 * * *", progress=lambda _: None, timed=False)
    days = [figures["measurements"][f"day_{d}"] for d in range(1, DAYS + 1)]

    for day in days:
        assert day["files_per_sealed_hour_max"] == 1, day
        assert day["quality_one_new_hour_success"] and set(day["quality_one_new_hour_statuses"].values()) == {"OK"}
        assert day["persist_look_nothing_new"], day["persist_look_reason"]
    assert figures["compaction"]["files_per_hour_after"] == 1.0
    assert figures["compaction"]["files_per_hour_before"] > 1.0, "the runs left hours of several files to compact"
    assert days[-1]["sealed_hours"] >= days[0]["sealed_hours"] + (DAYS - 1) * 24

    first, last = (day["quality_one_new_hour_files_read"] for day in (days[0], days[-1]))
    assert last["events"] <= 1.2 * first["events"], (first, last)
    # Maintenance compacted the ledger whole (2 files or more: compact_min_files), so every reader
    # that opens it meets one file, whatever the day.
    assert [d["ledger_files"] for d in days] == [1] * DAYS

    stream = load_stream(tmp_path / "streams.yaml", "telemetry")
    persisted = Counter()
    for table in ("events", "late", "quarantine"):
        rows = open_delta_table(stream.table_path(table)).to_pyarrow_table(
            columns=["source_partition", "source_offset"]
        )
        persisted.update(zip(rows.column(0).to_pylist(), rows.column(1).to_pylist(), strict=True))
    assert set(persisted.values()) == {1}, "no record twice"
    assert len(persisted) == figures["records_produced"]
