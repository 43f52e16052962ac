"""The result files of the recovery and backfill jobs: one Struct each, written by the job and
read by its operator, so a field either side renames fails at once, naming it."""

from __future__ import annotations

import msgspec
import pytest

from tidemark.backfill_result import (
    BackfillRefusal,
    BackfillResult,
    BackfillYielded,
    LostSpan,
    decode_backfill_outcome,
    encode_backfill_outcome,
)
from tidemark.live_batch_wait import LiveBatchYield
from tidemark.offset_coverage import OffsetRange
from tidemark.reconciliation import ComparisonWithLive, HourComparison
from tidemark.recovery_request import RecoveryRequest
from tidemark.recovery_result import (
    RecoveredRange,
    RecoveryResult,
    RecoveryYielded,
    decode_recovery_outcome,
    encode_recovery_outcome,
)

RECOVERED = RecoveryResult(
    stream="telemetry",
    partition=2,
    reason="STOP",
    inserted=150,
    commit_conflicts_retried=1,
    recovered=(RecoveredRange(20, 170, 150, 1, "2026-11-22T01:00:00.000Z"),),
    lost=((0, 20),),
    event_hours=("2026-11-22T01:00:00.000Z",),
    finished_at="2026-11-22T02:00:00.000Z",
)


def test_a_recovery_result_round_trips_through_its_file_and_reads_as_plain_json():
    assert RecoveryResult.decode(RECOVERED.encode()) == RECOVERED
    assert RecoveryResult.from_json(RECOVERED.to_json()) == RECOVERED, "the recover task's XCom, as the DAG reads it"
    document = RECOVERED.to_json()
    assert document["lost"] == [[0, 20]], "lost offsets as [start, end] pairs, as the summary and the alarms show spans"
    assert document["recovered"] == [
        {
            "start": 20,
            "end": 170,
            "inserted": 150,
            "commit_conflicts_retried": 1,
            "global_watermark": "2026-11-22T01:00:00.000Z",
        }
    ]


def test_a_recovery_result_missing_a_field_fails_naming_it():
    document = {k: v for k, v in RECOVERED.to_json().items() if k != "inserted"}
    with pytest.raises(msgspec.ValidationError, match="Object missing required field `inserted`"):
        RecoveryResult.decode(msgspec.json.encode(document))


def _backfill(**changes) -> BackfillResult:
    fields = dict(
        stream="telemetry",
        start="2026-11-21T00:00:00.000Z",
        end="2026-11-22T00:00:00.000Z",
        partitions=(0, 1),
        shadow="nov21",
        target="shadow:nov21",
        ranges={"0": (30, 60), "1": (0, 60)},
        batches=3,
        records=90,
        late=0,
        quarantined=0,
        seconds=1.5,
        records_per_second=60,
        event_hours=("2026-11-21T10:00:00.000Z",),
        inserted=None,
        commit_conflicts_retried=None,
        lost=(LostSpan(0, (None, 30), ("2026-11-21T00:00:00.000Z", "2026-11-21T01:00:00.000Z")),),
        comparison=None,
    )
    return BackfillResult(**{**fields, **changes})


def test_a_backfill_outcome_is_a_result_or_a_refusal_told_apart_by_its_outcome_field():
    comparison = ComparisonWithLive(
        compared_hours=2,
        records_live=53,
        records_shadow=60,
        differing=(HourComparison(1, "2026-11-21T10:00:00.000Z", 53, 60, 7, 0, 0),),
        recovery_requests=(RecoveryRequest("telemetry", 1, (OffsetRange(70, 77),), "RECONCILE: 7 records"),),
    )
    result = _backfill(comparison=comparison)
    assert decode_backfill_outcome(encode_backfill_outcome(result)) == result
    document = result.to_json()
    assert (document["outcome"], document["ranges"], document["lost"][0]["offsets"]) == (
        "done",
        {"0": [30, 60], "1": [0, 60]},
        [None, 30],
    )
    assert document["comparison"]["recovery_requests"] == [
        {
            "stream": "telemetry",
            "partition": 1,
            "ranges": [{"start": 70, "end": 77}],
            "reason": "RECONCILE: 7 records",
            "restart_live": False,
        }
    ]
    refusal = BackfillRefusal("param 'partitions': topic 'telemetry' has no partition 7")
    assert msgspec.json.decode(encode_backfill_outcome(refusal)) == {"outcome": "refused", "error": refusal.error}
    assert decode_backfill_outcome(encode_backfill_outcome(refusal)) == refusal


def test_a_backfill_outcome_of_an_unknown_kind_fails_naming_the_tag():
    with pytest.raises(msgspec.ValidationError, match="Invalid value 'half' - at `\\$.outcome`"):
        decode_backfill_outcome(b'{"outcome": "half"}')


YIELDED = LiveBatchYield(7, "/ck/telemetry/persist", {"0": ((100, 150),)}, "its run stopped", 0.6)


def test_a_recovery_outcome_is_a_result_or_a_yield_told_apart_by_its_outcome_field():
    assert decode_recovery_outcome(encode_recovery_outcome(RECOVERED)) == RECOVERED
    assert RECOVERED.to_json()["outcome"] == "done"
    yielded = RecoveryYielded("telemetry", 0, "STOP", YIELDED)
    document = msgspec.json.decode(encode_recovery_outcome(yielded))
    assert document == {
        "outcome": "yielded",
        "stream": "telemetry",
        "partition": 0,
        "reason": "STOP",
        "yielded": {
            "live_batch": 7,
            "live_checkpoint": "/ck/telemetry/persist",
            "offsets": {"0": [[100, 150]]},
            "reason": "its run stopped",
            "waited_s": 0.6,
        },
    }
    assert decode_recovery_outcome(encode_recovery_outcome(yielded)) == yielded
    # A result file written before outcomes had a tag reads as what it was: a result.
    untagged = {k: v for k, v in RECOVERED.to_json().items() if k != "outcome"}
    assert RecoveryResult.decode(msgspec.json.encode(untagged)) == RECOVERED


def test_a_backfill_that_yielded_is_its_own_outcome():
    yielded = BackfillYielded("telemetry", "events", YIELDED)
    assert decode_backfill_outcome(encode_backfill_outcome(yielded)) == yielded
    assert msgspec.json.decode(encode_backfill_outcome(yielded))["outcome"] == "yielded"
