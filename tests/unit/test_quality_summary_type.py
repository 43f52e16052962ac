"""The quality summary is one typed value: what the quality run writes (summary.json, its result
file, the XCom) reads back as the same value; a summary written before the type existed still
reads; one that cannot be read fails naming the file and the field."""

from __future__ import annotations

import json

import pytest

from expectations.quality_result import CheckSummary, PartitionQuality, QualityRunResult
from expectations.quality_summary import summary_folder, write_summary
from tidemark.offset_coverage import OffsetRange
from tidemark.quality_status import QualityStatus
from tidemark.quality_summary import (
    QualitySummaryError,
    quality_summary_builtins,
    quality_summary_from,
    read_quality_summary,
)
from tidemark.recovery_request import RecoveryRequest

HOUR_MS = 1_795_338_000_000  # 2026-11-22T09:00:00Z
STOPPED = "read position 1200 has not moved for 45m while the log end moved to 1800"


def _result(folder) -> QualityRunResult:
    stopped = PartitionQuality(
        partition=1,
        status=QualityStatus.STOP,
        records=1001,
        late=1,
        quarantined=2,
        position=1200,
        log_earliest=0,
        log_end=1800,
        lag=600,
        partition_watermark_ms=HOUR_MS + 59 * 60_000,
        holes=(OffsetRange(1200, 1300),),
        hole_ranges=(),
        lost=(OffsetRange(0, 5),),
        failed_checks=("stall",),
        reason=STOPPED,
        reasons=(STOPPED,),
    )
    return QualityRunResult(
        stream="telemetry",
        run_name="scheduled__1.check",
        now_ms=HOUR_MS + 3_600_000,
        hours_ms=(HOUR_MS,),
        partitions=(stopped,),
        hours=(),
        checks=(CheckSummary("stall", True, False, 4, ("stall_status",), (), 0.1234, 0.2),),
        recovery_requests=(RecoveryRequest("telemetry", 1, (OffsetRange(1200, 1800),), STOPPED),),
        summary_json=str(folder / "summary.json"),
        summary_html=str(folder / "summary.html"),
        data_docs_index=None,
        hour_reports=(),
        seconds=1.23456,
        stage_seconds=(("ledger", 0.5),),
    )


def test_the_summary_the_quality_run_writes_reads_back_as_the_value_it_wrote(tmp_path):
    folder = summary_folder(tmp_path, "telemetry", "scheduled__1.check")
    result = _result(folder)

    write_summary(result)
    summary = read_quality_summary(folder / "summary.json")

    assert summary == result.summary()
    (partition,) = summary.partitions
    assert (partition.status, partition.holes, partition.lost, partition.lag) == (
        QualityStatus.STOP,
        ((1200, 1300),),
        ((0, 5),),
        600,
    )
    assert partition.partition_watermark == "2026-11-22T09:59:00.000Z"
    assert summary.now == "2026-11-22T10:00:00.000Z" and summary.hours == ("2026-11-22T09:00:00Z",)
    assert summary.verdict == "checks failed: stall"
    assert summary.checks[0].facts_seconds == 0.123 and summary.seconds == 1.235
    assert summary.recovery_requests[0].ranges == (OffsetRange(1200, 1800),)
    assert summary.paths.data_docs_index is None and summary.stage_seconds == {"ledger": 0.5}


def test_the_xcom_holds_plain_json_that_converts_back_to_the_same_value(tmp_path):
    result = _result(tmp_path)
    summary = result.summary()

    document = quality_summary_builtins(summary)

    # Lists, as JSON gives them back (an XCom, a result file), never tuples.
    assert document == json.loads(json.dumps(document)) == result.to_json()
    assert document["partitions"][0]["status"] == "STOP" and document["partitions"][0]["holes"] == [[1200, 1300]]
    assert document["recovery_requests"][0]["ranges"] == [{"start": 1200, "end": 1800}]
    assert quality_summary_from(document, "the XCom") == summary


# A summary.json as the writer before the typed value wrote it, from before the sweep and the
# damage were reported (no "sweep", no "damage"), trimmed to one partition and one check.
_OLDER_SUMMARY = """{
  "stream": "telemetry", "run_name": "scheduled__0.check", "now_ms": 1795651054393, "now": "2026-11-25T23:57:34.393Z",
  "hours": [], "success": false, "status_order": ["OK", "WARN", "LAGGING", "STALL", "STOP", "HOLE", "LOST"],
  "partitions": [{"partition": 1, "status": "LOST", "reason": "30 offsets lost", "records": 0, "late": 0,
                  "quarantined": 0, "position": 40, "log_earliest": 70, "log_end": 100, "lag": 60,
                  "partition_watermark_ms": 1795647381748, "partition_watermark": "2026-11-25T22:56:21.748Z",
                  "holes": [], "hole_ranges": [], "lost": [[40, 70]], "failed_checks": ["retention"],
                  "reasons": ["30 offsets lost"]}],
  "hours_checked": [],
  "checks": [{"name": "retention", "ran": true, "success": false, "rows": 2, "failed_rules": ["position_still_retained"],
              "warned_rules": [], "facts_seconds": 0.0, "gx_seconds": 1.349}],
  "recovery_requests": [],
  "paths": {"summary_json": "/r/summary.json", "summary_html": "/r/summary.html", "data_docs_index": null, "hour_reports": []},
  "seconds": 4.5, "stage_seconds": {"ledger": 0.247}
}"""


def test_a_summary_written_before_the_typed_value_still_reads(tmp_path):
    path = tmp_path / "summary.json"
    path.write_text(_OLDER_SUMMARY)

    summary = read_quality_summary(path)

    (partition,) = summary.partitions
    assert (partition.partition, partition.status, partition.lost, partition.failed_checks) == (
        1,
        QualityStatus.LOST,
        ((40, 70),),
        ("retention",),
    )
    assert (summary.sweep, summary.damage, summary.success, summary.verdict) == (
        False,
        (),
        False,
        "checks failed: retention",
    )


def test_an_older_recovery_request_with_pairs_for_ranges_fails_naming_the_file_and_the_field(tmp_path):
    path = tmp_path / "summary.json"
    document = json.loads(_OLDER_SUMMARY)
    document["recovery_requests"] = [{"stream": "telemetry", "partition": 1, "ranges": [[40, 70]], "reason": "LOST"}]
    path.write_text(json.dumps(document))

    with pytest.raises(QualitySummaryError) as failure:
        read_quality_summary(path)

    assert str(failure.value) == (
        f"{path} is not a quality summary tidemark can read (Expected `object`, got `array` - at "
        "`$.recovery_requests[0].ranges[0]`); open the summary.html beside it, or run the quality DAG again to write a new one"
    )


def test_a_file_that_is_not_json_or_is_missing_is_named(tmp_path):
    half_written = tmp_path / "summary.json"
    half_written.write_text('{"stream": "telem')

    with pytest.raises(
        QualitySummaryError,
        match=rf"^{half_written} is not a quality summary tidemark can read \(Input data was truncated\)",
    ):
        read_quality_summary(half_written)
    with pytest.raises(
        QualitySummaryError,
        match=rf"^{tmp_path / 'gone.json'}: cannot read the quality summary \(No such file or directory\)$",
    ):
        read_quality_summary(tmp_path / "gone.json")
