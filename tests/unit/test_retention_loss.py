"""Positions lost to retention: which, and what a person is told (tidemark.retention_loss)."""

from tidemark.log_connection import KafkaConnection, KinesisConnection
from tidemark.retention_loss import LostRange, lost_ranges, retention_loss_message

TOPIC = KafkaConnection("broker:9092", "telemetry")
STREAM = KinesisConnection("rides", "us-east-1")


def test_a_partition_whose_log_starts_past_its_position_lost_exactly_the_positions_between():
    positions = {0: 100, 1: 40, 2: 7}
    earliest = {0: 100, 1: 70, 2: 0}
    assert lost_ranges(positions, earliest) == (LostRange(1, 40, 70),)
    assert lost_ranges({3: 5}, {}) == (), "no known earliest position: nothing is claimed lost"


def test_the_message_names_the_topic_partition_offsets_and_what_to_do():
    message = retention_loss_message(TOPIC, (LostRange(1, 40, 70), LostRange(3, 0, 5)))
    assert "topic 'telemetry'" in message
    assert "partition 1: offsets [40, 70) (30 offsets); partition 3: offsets [0, 5) (5 offsets)" in message
    assert "retention.ms/retention.bytes" in message
    assert "rather than skip them" in message and "LOST" in message


def test_the_message_of_a_kinesis_stream_names_shards_sequence_numbers_and_says_the_count_is_unknown():
    sequence = 49_590_338_271_490_256_608_559_692_538_361_571_095_921_575_989_136_588_898
    message = retention_loss_message(STREAM, (LostRange(7, sequence, None), LostRange(2, 5, 9)))
    assert "Kinesis stream 'rides'" in message
    assert f"shard shardId-000000000007 (partition 7): sequence numbers [{sequence}, the shard's end)" in message
    assert "shard shardId-000000000002 (partition 2): sequence numbers [5, 9) were deleted" in message, "no count"
    assert "RetentionPeriodHours" in message and "how many records were lost is unknown" in message
    assert LostRange(7, sequence, None).to_json() == {"partition": 7, "start": str(sequence), "end": None}
