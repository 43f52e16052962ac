"""A backfill compared with live: which hours differ, and what recovery replays."""

import msgspec

from tidemark.backfill_result import BackfillResult
from tidemark.offset_coverage import OffsetRange
from tidemark.reconciliation import ComparisonWithLive, HourComparison, Reconciliation
from tidemark.recovery_request import RecoveryRequest

H = 3_600_000


def hour(partition: int, hour_ms: int, live: int, shadow: int, **differences: int) -> HourComparison:
    return HourComparison.of_hour_ms(partition, hour_ms, live, shadow, **differences)


def test_equal_hours_do_not_differ_and_need_no_recovery():
    same = Reconciliation("telemetry", (hour(0, 0, 10, 10), hour(1, H, 4, 4)), {})
    assert same.differing == []
    assert same.recovery_requests() == []
    assert same.comparison() == ComparisonWithLive(
        compared_hours=2, records_live=14, records_shadow=14, differing=(), recovery_requests=()
    )


def test_records_missing_in_live_become_one_recovery_request_per_partition_naming_the_hours():
    hours = (
        hour(0, 0, 10, 10),
        hour(2, H, 7, 10, missing_in_live=3),
        hour(2, 2 * H, 9, 10, missing_in_live=1),
        hour(3, H, 5, 4, extra_in_live=1),
    )
    reconciliation = Reconciliation("telemetry", hours, {2: (OffsetRange(40, 43), OffsetRange(90, 91))})
    assert [h.partition for h in reconciliation.differing] == [2, 2, 3]
    (request,) = reconciliation.recovery_requests()
    assert request == RecoveryRequest(
        "telemetry",
        2,
        (OffsetRange(40, 43), OffsetRange(90, 91)),
        "RECONCILE: 4 records the log holds are missing in live's events, hours 1970-01-01T01:00:00.000Z, 1970-01-01T02:00:00.000Z",
    )
    assert hours[1].describe() == "partition 2, hour 1970-01-01T01:00:00.000Z: live 7, backfill 10 (3 missing in live)"
    assert hours[3].describe() == "partition 3, hour 1970-01-01T01:00:00.000Z: live 5, backfill 4 (1 only in live)"
    assert reconciliation.comparison().differing == hours[1:]
    assert reconciliation.comparison().recovery_requests == (request,)


def test_a_record_live_routed_elsewhere_is_a_difference_but_not_a_recovery():
    routed = hour(1, 0, 9, 10, routed_differently=1)
    reconciliation = Reconciliation("telemetry", (routed,), {})
    assert reconciliation.differing == [routed]
    assert reconciliation.recovery_requests() == []
    assert "1 in live's late or quarantine table instead" in routed.describe()


def test_an_hour_comparison_is_written_and_read_back_as_one_type_with_its_hour_as_text():
    compared = hour(1, 2 * H, 53, 60, missing_in_live=7)
    document = msgspec.json.decode(msgspec.json.encode(compared))
    assert document == {
        "partition": 1,
        "hour": "1970-01-01T02:00:00.000Z",
        "live": 53,
        "shadow": 60,
        "missing_in_live": 7,
        "extra_in_live": 0,
        "routed_differently": 0,
    }
    read = msgspec.convert(document, HourComparison)
    assert (read, read.hour_ms, read.differs) == (compared, 2 * H, True)


def test_the_backfill_result_s_comparison_decodes_as_the_reconciliation_s_own_types():
    compared = Reconciliation(
        "telemetry", (hour(0, 0, 10, 10), hour(1, H, 53, 60, missing_in_live=7)), {1: (OffsetRange(70, 77),)}
    ).comparison()
    document = {
        "outcome": "done",
        "stream": "telemetry",
        "start": "1970-01-01T00:00:00.000Z",
        "end": "1970-01-01T02:00:00.000Z",
        "partitions": [0, 1],
        "shadow": "s",
        "target": "shadow:s",
        "ranges": {"0": [0, 10], "1": [0, 60]},
        "batches": 1,
        "records": 70,
        "late": 0,
        "quarantined": 0,
        "seconds": 1.0,
        "records_per_second": 70,
        "event_hours": [],
        "inserted": None,
        "commit_conflicts_retried": None,
        "lost": [],
        "comparison": msgspec.json.decode(msgspec.json.encode(compared)),
    }
    result = msgspec.convert(document, BackfillResult)
    assert result.comparison == compared
    (differing,) = result.comparison.differing
    assert (
        differing.describe() == "partition 1, hour 1970-01-01T01:00:00.000Z: live 53, backfill 60 (7 missing in live)"
    )
    assert result.recovery_requests == compared.recovery_requests and len(result.recovery_requests) == 1
