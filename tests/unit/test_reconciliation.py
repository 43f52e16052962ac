"""A backfill compared with live: which hours differ, and what recovery replays."""

from tidemark.offset_coverage import OffsetRange
from tidemark.reconciliation import HourComparison, Reconciliation
from tidemark.recovery_request import RecoveryRequest

H = 3_600_000


def test_equal_hours_do_not_differ_and_need_no_recovery():
    same = Reconciliation("telemetry", (HourComparison(0, 0, 10, 10), HourComparison(1, H, 4, 4)), {})
    assert same.differing == []
    assert same.recovery_requests() == []
    assert same.to_json() == {
        "compared_hours": 2,
        "records_live": 14,
        "records_shadow": 14,
        "differing": [],
        "recovery_requests": [],
    }


def test_records_missing_in_live_become_one_recovery_request_per_partition_naming_the_hours():
    hours = (
        HourComparison(0, 0, 10, 10),
        HourComparison(2, H, 7, 10, missing_in_live=3),
        HourComparison(2, 2 * H, 9, 10, missing_in_live=1),
        HourComparison(3, H, 5, 4, extra_in_live=1),
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


def test_a_record_live_routed_elsewhere_is_a_difference_but_not_a_recovery():
    hour = HourComparison(1, 0, 9, 10, routed_differently=1)
    reconciliation = Reconciliation("telemetry", (hour,), {})
    assert reconciliation.differing == [hour]
    assert reconciliation.recovery_requests() == []
    assert "1 in live's late or quarantine table instead" in hour.describe()
