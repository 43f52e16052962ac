"""The recover DAG runs a quality, sweep or backfill run triggers are read from that task's result
by its own type (tidemark_airflow.recovery_trigger), never by string keys."""

from __future__ import annotations

import pytest

from tidemark.backfill_result import BackfillResult
from tidemark.offset_coverage import OffsetRange
from tidemark.quality_summary import QualitySummary, SummaryPaths, quality_summary_builtins
from tidemark.reconciliation import HourComparison, Reconciliation
from tidemark.recovery_request import RecoveryRequest
from tidemark_airflow.recovery_trigger import backfill_requests, quality_requests

REQUEST = RecoveryRequest("telemetry", 1, (OffsetRange(70, 77),), "RECONCILE: 7 records")


def _backfill(comparison) -> dict:
    return BackfillResult(
        stream="telemetry",
        start="2026-11-21T10:00:00.000Z",
        end="2026-11-21T12:00:00.000Z",
        partitions=(0, 1),
        shadow="s",
        target="shadow:s",
        ranges={"1": (0, 77)},
        batches=1,
        records=60,
        late=0,
        quarantined=0,
        seconds=1.0,
        records_per_second=60,
        event_hours=(),
        inserted=None,
        commit_conflicts_retried=None,
        lost=(),
        comparison=comparison,
    ).to_json()


def test_a_backfill_asks_for_the_recoveries_of_its_comparison_and_none_when_not_compared():
    compared = Reconciliation(
        "telemetry",
        (HourComparison.of_hour_ms(1, 1_795_860_000_000, 53, 60, missing_in_live=7),),
        {1: (OffsetRange(70, 77),)},
    ).comparison()

    (request,) = backfill_requests(_backfill(compared))
    assert (request.stream, request.partition, request.ranges) == ("telemetry", 1, (OffsetRange(70, 77),))
    assert backfill_requests(_backfill(None)) == ()


def test_a_result_that_is_not_a_backfill_result_is_refused_naming_it_and_the_field():
    with pytest.raises(ValueError, match=r"the backfill task's result is not a backfill result .* at `\$.records`"):
        backfill_requests({**_backfill(None), "records": "many"})


def test_a_quality_run_asks_for_the_recoveries_its_summary_holds():
    summary = QualitySummary(
        stream="telemetry",
        run_name="r",
        now_ms=0,
        now="1970-01-01T00:00:00.000Z",
        hours=(),
        success=False,
        recovery_requests=(REQUEST,),
        paths=SummaryPaths(summary_json="/s.json", summary_html="/s.html"),
    )
    assert quality_requests(quality_summary_builtins(summary)) == (REQUEST,)
    with pytest.raises(ValueError, match="the quality task's result"):
        quality_requests({"stream": "telemetry"})
