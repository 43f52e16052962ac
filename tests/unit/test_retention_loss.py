"""Offsets lost to retention: which, and what a person is told (tidemark.retention_loss)."""

from tidemark.retention_loss import LostOffsets, lost_offsets, retention_loss_message


def test_a_partition_whose_log_starts_past_its_position_lost_exactly_the_offsets_between():
    positions = {0: 100, 1: 40, 2: 7}
    earliest = {0: 100, 1: 70, 2: 0}
    assert lost_offsets(positions, earliest) == (LostOffsets(1, 40, 70),)
    assert lost_offsets({3: 5}, {}) == (), "no known earliest offset: nothing is claimed lost"


def test_the_message_names_the_topic_partition_offsets_and_what_to_do():
    message = retention_loss_message("telemetry", (LostOffsets(1, 40, 70), LostOffsets(3, 0, 5)))
    assert "topic 'telemetry'" in message
    assert "partition 1: offsets [40, 70) (30 offsets); partition 3: offsets [0, 5) (5 offsets)" in message
    assert "rather than skip them" in message and "LOST" in message
