"""From an event-time range to offsets, and what retention took: the plan of a backfill."""

from __future__ import annotations

import pytest

from tidemark.backfill_plan import BeyondRetentionError, LostPart, PartitionTimeIndex, plan_backfill
from tidemark.backfill_request import BackfillRequest
from tidemark.offset_coverage import OffsetRange

HOUR = 3_600_000
START, END = 10 * HOUR, 12 * HOUR


def _request(*partitions: int) -> BackfillRequest:
    return BackfillRequest("telemetry", START, END, partitions)


def test_the_range_is_the_first_offsets_stamped_at_start_and_at_end_capped_at_the_readable_end():
    logs = {
        0: PartitionTimeIndex(0, 500, None, 100, 300),
        1: PartitionTimeIndex(0, 250, None, 120, None),  # nothing stamped >= end yet: up to the readable end
        2: PartitionTimeIndex(0, 90, None, None, None),  # nothing stamped >= start: nothing to read
        3: PartitionTimeIndex(0, 400, None, 380, 420),  # the time index points past an open transaction
    }
    plan = plan_backfill(_request(0, 1, 2, 3), logs)
    assert plan.ranges == {0: OffsetRange(100, 300), 1: OffsetRange(120, 250), 3: OffsetRange(380, 400)}
    assert plan.lost == ()
    assert plan.offset_bounds() == {0: (100, 300), 1: (120, 250), 3: (380, 400)}


def test_nothing_is_lost_where_nothing_was_ever_deleted_or_the_range_starts_inside_retention():
    logs = {
        0: PartitionTimeIndex(0, 500, None, 0, 300),  # earliest 0: nothing deleted
        1: PartitionTimeIndex(50, 500, START - 1, 60, 300),  # first retained record before start
    }
    assert plan_backfill(_request(0, 1), logs).lost == ()


def test_a_range_partly_past_retention_reads_the_rest_and_reports_the_lost_offsets_and_times():
    first_retained = START + HOUR // 2
    logs = {0: PartitionTimeIndex(700, 900, first_retained, 700, 850), 1: PartitionTimeIndex(0, 500, None, 100, 300)}
    plan = plan_backfill(_request(0, 1), logs, ledger_first_offsets={0: 640})
    assert plan.ranges == {0: OffsetRange(700, 850), 1: OffsetRange(100, 300)}
    assert plan.lost == (LostPart(0, 640, 700, START, first_retained),)
    assert plan.lost[0].to_json() == {
        "partition": 0,
        "offsets": [640, 700],
        "event_time": ["1970-01-01T10:00:00.000Z", "1970-01-01T10:30:00.000Z"],
    }


def test_the_lake_knowing_the_range_began_after_the_deleted_offsets_means_nothing_was_lost():
    logs = {0: PartitionTimeIndex(700, 900, START + HOUR // 2, 700, 850)}
    assert plan_backfill(_request(0), logs, ledger_first_offsets={0: 700}).lost == ()


def test_without_the_lake_the_first_lost_offset_is_unknown_but_the_loss_is_still_reported():
    logs = {0: PartitionTimeIndex(700, 900, START + HOUR // 2, 700, 850)}
    (lost,) = plan_backfill(_request(0), logs).lost
    assert lost.first_offset is None and lost.to_json()["offsets"] == [None, 700]


def test_a_range_wholly_past_retention_in_every_partition_is_refused_before_any_work():
    logs = {0: PartitionTimeIndex(700, 900, END + HOUR, 700, 700), 1: PartitionTimeIndex(300, 300, None, None, None)}
    with pytest.raises(
        BeyondRetentionError,
        match=r"beyond the log's retention in every requested partition; the log holds records from 1970-01-01T13:00:00.000Z on",
    ):
        plan_backfill(_request(0, 1), logs)


def test_one_partition_past_retention_beside_a_readable_one_is_a_partial_loss_not_a_refusal():
    logs = {0: PartitionTimeIndex(700, 900, END + HOUR, 700, 700), 1: PartitionTimeIndex(0, 500, None, 100, 300)}
    plan = plan_backfill(_request(0, 1), logs)
    assert plan.ranges == {1: OffsetRange(100, 300)}
    assert [part.partition for part in plan.lost] == [0]
    assert plan.lost[0].end_ms == END
