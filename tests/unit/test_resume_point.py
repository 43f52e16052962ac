"""tidemark.resume_point: the state a live job resumes from when its checkpoint is lost."""

from tidemark.partition_status import PartitionStatus
from tidemark.resume_point import LedgerPosition, resume_state

HOUR = 3_600_000


def _position(partition, end, watermark, g, status="ACTIVE", log_end=None):
    return LedgerPosition(
        partition, end, end if log_end is None else log_end, watermark, g, status, "event_time", 5 * HOUR
    )


def test_no_live_row_means_no_resume():
    assert resume_state([], None, now_ms=10 * HOUR) is None
    assert resume_state([], 3 * HOUR, now_ms=10 * HOUR) is None


def test_each_partition_continues_where_its_furthest_range_ended_with_its_watermark_and_status():
    state = resume_state(
        [_position(0, 120, 2 * HOUR, 2 * HOUR - 5), _position(1, 80, 3 * HOUR, 2 * HOUR, status="IDLE", log_end=95)],
        None,
        now_ms=10 * HOUR,
    )
    assert state.positions() == {0: 120, 1: 80}
    assert state.partitions[0].watermark_ms == 2 * HOUR
    assert state.partitions[1].status == PartitionStatus.IDLE
    assert state.partitions[1].log_end == 95
    assert (state.plan_seq, state.read_time_ms, state.slicing) == (-1, 10 * HOUR, "event_time")


def test_global_watermark_is_the_largest_ever_recorded_so_it_never_decreases():
    positions = [_position(0, 10, 4 * HOUR, 2 * HOUR), _position(1, 10, 4 * HOUR, 3 * HOUR)]
    assert resume_state(positions, None, now_ms=0).global_watermark_ms == 3 * HOUR
    assert resume_state(positions, 7 * HOUR, now_ms=0).global_watermark_ms == 7 * HOUR


def test_rows_of_older_ledgers_without_global_watermark_fall_back_to_the_seals():
    positions = [_position(0, 10, 4 * HOUR, None)]
    assert resume_state(positions, None, now_ms=0).global_watermark_ms is None
    assert resume_state(positions, 2 * HOUR, now_ms=0).global_watermark_ms == 2 * HOUR


def test_the_step_ids_go_on_where_the_ledger_stopped():
    """A lost checkpoint does not number steps from 0 again: a record's step_id is the same
    whether or not the checkpoint was lost (see tests/integration/test_crash_points.py)."""
    positions = [LedgerPosition(0, 10, 10, None, HOUR, "ACTIVE", "event_time", 0)]
    assert resume_state(positions, None, now_ms=0, last_step_id=14).plan_seq == 14
    assert resume_state(positions, None, now_ms=0).plan_seq == -1
