"""tidemark.partition_limit: a topic past source.max_partitions fails, naming the key and a value."""

from __future__ import annotations

import pytest

from tidemark.partition_limit import PartitionLimitError, check_partition_limit, suggested_partition_limit


def test_a_topic_at_the_limit_passes_and_one_partition_more_fails():
    assert check_partition_limit("telemetry", 2_048, 2_048) is None, "the limit itself is allowed"
    with pytest.raises(PartitionLimitError) as raised:
        check_partition_limit("telemetry", 2_049, 2_048)
    # 2,049 // 1,024 + 1 = 3 blocks of 1,024: the suggestion is 3072.
    assert str(raised.value) == (
        "topic 'telemetry' has 2049 partitions, more than source.max_partitions (2048); "
        "if that is expected, set source.max_partitions: 3072 for this stream"
    )


def test_a_topic_past_the_limit_fails_naming_the_key_the_count_and_a_value_that_holds_it():
    with pytest.raises(PartitionLimitError) as raised:
        check_partition_limit("telemetry", 2_500, 2_048)
    message = str(raised.value)
    assert "topic 'telemetry' has 2500 partitions, more than source.max_partitions (2048)" in message
    assert "set source.max_partitions: 3072" in message


def test_the_suggestion_leaves_room_to_grow():
    assert suggested_partition_limit(1_800) == 2_048
    assert suggested_partition_limit(2_048) == 3_072
    assert all(suggested_partition_limit(n) > n for n in (1, 1_023, 1_024, 5_000))
