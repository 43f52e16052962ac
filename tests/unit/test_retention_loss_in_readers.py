"""Retention overtaking a reader, at the two places it can be met: the log source's planning
(the driver sees the log start past a partition's position before it plans a batch) and a read
task (the offsets left the log between planning and reading). Both name the exact lost offsets.
Scripted stand-ins for the broker; tests/integration/test_world_faults.py runs the real one."""

from __future__ import annotations

import confluent_kafka
import pytest
from confluent_kafka import KafkaError
from test_kafka_log_batched import Message, ScriptedConsumer, consumer  # noqa: F401 (the fixture)

from connectors.kafka_log import KafkaLog, LogBounds, read_ranges
from spark_jobs.log_source.options import LogSourceOptions
from spark_jobs.log_source.reader import LogReader
from tidemark.log_connection import KafkaConnection
from tidemark.partition_status import PartitionStatus
from tidemark.retention_loss import LostRange, RetentionLossError
from tidemark.source_state import PartitionState, SourceState

TOPIC = "telemetry"


class LogWithBounds(KafkaLog):
    """The Kafka adapter over scripted bounds: its partitions and their bounds; no broker is asked."""

    def __init__(self, bounds: dict[int, LogBounds]):
        super().__init__("b:1", TOPIC)
        self._bounds = bounds

    def partition_ids(self):
        return sorted(self._bounds)

    def partition_bounds(self, partitions=None):
        return dict(self._bounds)


def _reader(bounds, **options) -> LogReader:
    options = LogSourceOptions(KafkaConnection("b:1", TOPIC), **options)
    return LogReader(options, clock=lambda: 1_763_800_000.0, open_log=lambda connection: LogWithBounds(bounds))


def _state(positions: dict[int, int]) -> dict:
    partitions = {
        p: PartitionState(position, position, 1_000, PartitionStatus.ACTIVE, 1_000) for p, position in positions.items()
    }
    return SourceState(7, 1_763_800_000_000, "event_time", 1_000, 2_000, partitions).to_offset(TOPIC)


def test_planning_stops_before_a_batch_naming_the_offsets_that_left_the_log():
    reader = _reader({0: LogBounds(0, 100, 100), 1: LogBounds(70, 100, 100)})
    with pytest.raises(RetentionLossError) as raised:
        reader.latestOffset(_state({0: 100, 1: 40}), None)
    assert raised.value.lost == (LostRange(1, 40, 70),)
    assert "partition 1: offsets [40, 70) (30 offsets) were deleted from the log before they were read" in str(
        raised.value
    )


def test_a_run_resumed_from_the_ledger_stops_the_same_way():
    reader = _reader({0: LogBounds(0, 100, 100), 1: LogBounds(70, 100, 100)}, resume_from=_state({0: 100, 1: 40}))
    with pytest.raises(RetentionLossError) as raised:
        reader.initialOffset()
    assert raised.value.lost == (LostRange(1, 40, 70),)


class RetentionMovedConsumer(ScriptedConsumer):
    earliest = 70

    def get_watermark_offsets(self, partition, timeout=None, cached=False):
        return (RetentionMovedConsumer.earliest, 100)


def test_a_read_task_that_meets_the_loss_names_the_offsets_up_to_the_earliest_retained(consumer, monkeypatch):
    consumer.script = [Message(1, error=KafkaError(KafkaError.OFFSET_OUT_OF_RANGE))]
    monkeypatch.setattr(confluent_kafka, "Consumer", RetentionMovedConsumer)
    with pytest.raises(RetentionLossError) as raised:
        list(read_ranges("b:1", TOPIC, {1: (40, 100)}, timeout_s=5))
    assert raised.value.lost == (LostRange(1, 40, 70),)
    assert "partition 1: offsets [40, 70)" in str(raised.value)
    assert consumer.created[0].closed


def test_an_accepted_range_is_passed_over_in_a_batch_of_its_own_and_never_read():
    reader = _reader({0: LogBounds(0, 100, 100), 1: LogBounds(70, 100, 100)}, accepted_losses=((1, 40, 70),))
    start = _state({0: 100, 1: 40})
    passed = SourceState.from_offset(reader.latestOffset(start, None))
    assert passed.plan_seq == 8 and passed.positions() == {0: 100, 1: 70}
    assert [passed.partitions[p].accepted_loss for p in (0, 1)] == [False, True]
    assert (passed.global_watermark_ms, passed.partitions[1].watermark_ms) == (1_000, 1_000), "event time untouched"
    [task] = reader.partitions(start, passed.to_offset(TOPIC))
    assert [(r.partition, r.start, r.end) for r in task.ranges] == [(0, 100, 100), (1, 40, 70)]
    assert task.records == ((), ()), "the driver hands an empty record list: the task reads nothing"


def test_an_accepted_range_never_covers_a_later_loss_nor_another_partition_s():
    accepted = ((1, 40, 70),)
    later = _reader({0: LogBounds(0, 100, 100), 1: LogBounds(110, 120, 120)}, accepted_losses=accepted)
    with pytest.raises(RetentionLossError) as raised:
        later.latestOffset(_state({0: 100, 1: 100}), None)
    assert raised.value.lost == (LostRange(1, 100, 110),)
    other = _reader({0: LogBounds(50, 100, 100), 1: LogBounds(70, 100, 100)}, accepted_losses=accepted)
    with pytest.raises(RetentionLossError) as raised:
        other.latestOffset(_state({0: 40, 1: 40}), None)
    assert raised.value.lost == (LostRange(0, 40, 50),)
