"""The record-count planner shares a row budget fairly and never passes a log end."""

import pytest

from tidemark.record_count_slices import plan_record_count_slices


def test_no_limit_reads_every_partition_to_its_log_end():
    assert plan_record_count_slices({0: 5, 1: 0}, {0: 10, 1: 3}, None) == {0: 10, 1: 3}


def test_budget_larger_than_backlog_reads_everything():
    assert plan_record_count_slices({0: 0, 1: 0}, {0: 3, 1: 4}, 100) == {0: 3, 1: 4}


def test_small_backlogs_are_served_first_and_the_rest_is_split_evenly():
    ends = plan_record_count_slices({0: 0, 1: 0, 2: 0, 3: 0}, {0: 1, 1: 1_000, 2: 1_000, 3: 1_000}, 301)
    assert ends == {0: 1, 1: 100, 2: 100, 3: 100}


def test_a_heavy_partition_cannot_starve_a_slow_one():
    ends = plan_record_count_slices({0: 10, 1: 0}, {0: 11, 1: 10_000_000}, 1_000)
    assert ends[0] == 11
    assert ends[1] == 999


def test_a_budget_smaller_than_the_partitions_is_spent_whole_one_record_each():
    positions = {p: 0 for p in range(4)}
    ends = plan_record_count_slices(positions, {p: 50 for p in range(4)}, 3)
    # Equal backlogs are served in partition order: partition 0's share is 3 // 4 = 0, then
    # 3 // 3, 2 // 2 and 1 // 1 give partitions 1-3 one record each; the whole budget moves.
    assert ends == {0: 0, 1: 1, 2: 1, 3: 1}


def test_ends_never_go_backwards_even_if_the_log_shrank():
    assert plan_record_count_slices({0: 10}, {0: 4}, 5) == {0: 10}


def test_invalid_budget():
    with pytest.raises(ValueError):
        plan_record_count_slices({0: 0}, {0: 10}, 0)
