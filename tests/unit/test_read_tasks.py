"""tidemark.read_tasks: a batch's partitions packed into few read tasks, balanced by offsets."""

from __future__ import annotations

import pytest

from tidemark.read_tasks import assign_read_tasks


def _loads(tasks, offsets):
    return [sum(offsets[p] for p in task) for task in tasks]


def test_every_partition_is_in_exactly_one_task_and_no_task_is_empty():
    offsets = {p: (p * 37) % 11 for p in range(256)}  # some partitions with nothing to read
    tasks = assign_read_tasks(offsets, 2)
    assert len(tasks) == 2
    assert sorted(p for task in tasks for p in task) == list(range(256))
    assert all(task for task in tasks)
    assert all(task == sorted(task) for task in tasks)


def test_tasks_are_balanced_by_offsets_not_by_partition_count():
    offsets = {0: 1_000, 1: 10, 2: 10, 3: 10, 4: 990}
    assert sorted(_loads(assign_read_tasks(offsets, 2), offsets)) == [1_010, 1_010]
    skewed = {0: 6_000, **{p: 1_000 for p in range(1, 7)}}
    assert sorted(_loads(assign_read_tasks(skewed, 2), skewed)) == [6_000, 6_000]


def test_never_more_tasks_than_partitions_with_offsets():
    offsets = {0: 5, 1: 0, 2: 7, 3: 0}
    tasks = assign_read_tasks(offsets, 8)
    assert len(tasks) == 2, "a partition with nothing to read costs no task of its own"
    assert sorted(p for task in tasks for p in task) == [0, 1, 2, 3]


def test_a_batch_where_nothing_is_read_still_has_one_task_for_the_ledger_rows():
    assert assign_read_tasks({p: 0 for p in range(1_800)}, 4) == [list(range(1_800))]
    assert assign_read_tasks({}, 4) == []


def test_one_task_per_partition_when_allowed_and_the_same_answer_every_time():
    offsets = {p: 100 + p for p in range(4)}
    assert sorted(assign_read_tasks(offsets, 4)) == [[0], [1], [2], [3]]
    many = {p: (p * 7919) % 1_000 for p in range(1_800)}
    assert assign_read_tasks(many, 16) == assign_read_tasks(dict(reversed(many.items())), 16)


def test_a_task_count_below_one_is_refused():
    with pytest.raises(ValueError, match="max_tasks must be >= 1, got 0"):
        assign_read_tasks({0: 1}, 0)
