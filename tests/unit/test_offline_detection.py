"""The offline rule in the core: exact periods for known gaps, whatever the records' batching."""

from __future__ import annotations

import random

import pytest

from tidemark.offline_detection import DeviceTimeline, OfflinePeriod, OfflineRule

MINUTE = 60_000
AFTER = 30 * MINUTE
T0 = 1_795_280_000_000  # 2026-11-21T17:33:20Z


def test_a_gap_longer_than_offline_after_is_one_period_from_last_plus_offline_after_to_the_next_record():
    timeline, periods = OfflineRule(AFTER).advance(DeviceTimeline(), [T0, T0 + 31 * MINUTE], T0 + 31 * MINUTE)
    assert periods == [OfflinePeriod(T0 + AFTER, T0 + 31 * MINUTE)]
    assert timeline == DeviceTimeline(T0 + 31 * MINUTE, None)


def test_a_gap_of_exactly_offline_after_keeps_the_device_online():
    timeline, periods = OfflineRule(AFTER).advance(DeviceTimeline(), [T0, T0 + AFTER], T0 + AFTER)
    assert periods == []
    assert timeline.deadline_ms(AFTER) == T0 + 2 * AFTER


def test_the_deadline_reached_by_the_watermark_opens_a_period_and_the_next_record_closes_it():
    rule = OfflineRule(AFTER)
    timeline, periods = rule.advance(DeviceTimeline(), [T0], T0 + AFTER - 1)
    assert periods == [] and timeline == DeviceTimeline(T0, None)
    timeline, periods = rule.advance(timeline, [], T0 + AFTER)
    assert periods == [OfflinePeriod(T0 + AFTER, None)]
    assert timeline == DeviceTimeline(T0, T0 + AFTER) and timeline.deadline_ms(AFTER) is None
    timeline, periods = rule.advance(timeline, [T0 + 5 * AFTER], T0 + 6 * AFTER)
    # Closed, then offline again 30 min after that record (the watermark is past it).
    assert periods == [OfflinePeriod(T0 + AFTER, T0 + 5 * AFTER), OfflinePeriod(T0 + 6 * AFTER, None)]


def test_duplicates_and_order_within_a_call_do_not_matter():
    rule = OfflineRule(AFTER)
    records = [T0 + 50 * MINUTE, T0, T0, T0 + 10 * MINUTE]
    assert rule.advance(DeviceTimeline(), records, T0 + 50 * MINUTE) == rule.advance(
        DeviceTimeline(), sorted(set(records)), T0 + 50 * MINUTE
    )
    assert rule.advance(DeviceTimeline(), records, T0 + 50 * MINUTE)[1] == [
        OfflinePeriod(T0 + 40 * MINUTE, T0 + 50 * MINUTE)
    ]


def test_any_cut_into_watermark_steps_gives_the_periods_of_one_step():
    rng = random.Random(7)
    records = sorted({T0 + rng.randrange(0, 12 * 60) * MINUTE for _ in range(40)})
    end = T0 + 13 * 60 * MINUTE
    rule = OfflineRule(AFTER)
    _, at_once = rule.advance(DeviceTimeline(), records, end)
    for _ in range(20):
        steps = sorted(rng.sample(range(T0, end), 15)) + [end]
        timeline, table = DeviceTimeline(), {}
        for watermark in steps:
            due = [r for r in records if (timeline.last_record_ms or 0) < r <= watermark]
            timeline, periods = rule.advance(timeline, due, watermark)
            for period in periods:
                table[period.offline_at_ms] = (
                    period.online_at_ms if period.online_at_ms is not None else table.get(period.offline_at_ms)
                )
        assert sorted(table.items()) == [(p.offline_at_ms, p.online_at_ms) for p in at_once]


def test_report_from_hides_periods_that_began_before_it_but_keeps_their_state():
    rule = OfflineRule(AFTER, report_from_ms=T0 + AFTER + 1)
    timeline, periods = rule.advance(DeviceTimeline(), [T0], T0 + AFTER)
    assert periods == [] and timeline.offline_at_ms == T0 + AFTER
    timeline, periods = rule.advance(timeline, [T0 + 3 * AFTER], T0 + 3 * AFTER)
    assert periods == [] and timeline == DeviceTimeline(T0 + 3 * AFTER, None)


def test_contract_violations_fail_loudly():
    rule = OfflineRule(AFTER)
    with pytest.raises(ValueError, match="after the watermark"):
        rule.advance(DeviceTimeline(), [T0 + 1], T0)
    with pytest.raises(ValueError, match="not after the last record"):
        rule.advance(DeviceTimeline(T0, None), [T0], T0 + 1)
    with pytest.raises(ValueError, match="offline_after_ms"):
        OfflineRule(0)
