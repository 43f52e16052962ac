"""The retention check's facts with ranges accepted as lost (expectations.retention): the accepted
range is judged passed, anything retention took beyond it is still lost."""

from types import SimpleNamespace

from expectations import retention
from tidemark.accepted_loss import AcceptedLoss
from tidemark.log_position import KINESIS_SEQUENCE_NUMBERS
from tidemark.offset_coverage import OffsetRange
from tidemark.retention_loss import LostRange

ALICE = AcceptedLoss(1, 40, 70, "alice", 0)


def test_an_accepted_range_at_the_position_is_passed_and_a_loss_beyond_it_is_still_lost():
    [fact] = retention.facts({1: 40}, {1: 70}, {}, [ALICE])
    assert (fact.position, fact.never_read, fact.accepted) == (70, (), (ALICE,))
    [fact] = retention.facts({1: 40}, {1: 85}, {}, [ALICE])
    assert fact.never_read == (OffsetRange(70, 85),), "what retention took since is a loss of its own"
    [fact] = retention.facts({1: 100}, {1: 110}, {}, [ALICE])
    assert fact.never_read == (OffsetRange(100, 110),), "an acceptance behind the position covers nothing"
    [other] = retention.facts({0: 40}, {0: 70}, {}, [ALICE])
    assert other.never_read == (OffsetRange(40, 70),), "another partition's acceptance covers nothing"


def test_a_kinesis_shard_s_accepted_range_is_not_expired_unread_and_the_rest_is():
    shard = SimpleNamespace(earliest=70, finished=False, shard_id="shardId-1", lost=LostRange(1, 40, 70))
    [fact] = retention.kinesis_facts({1: 40}, {1: shard}, {}, KINESIS_SEQUENCE_NUMBERS, [ALICE])
    assert (fact.position, fact.lost_unread) == (70, None)
    shard = SimpleNamespace(earliest=None, finished=False, shard_id="shardId-1", lost=LostRange(1, 40, None))
    [fact] = retention.kinesis_facts({1: 40}, {1: shard}, {}, KINESIS_SEQUENCE_NUMBERS, [ALICE])
    assert fact.lost_unread == LostRange(1, 70, None)
