"""Which partitions' ranges each read task of a batch reads.

A batch plans one range per partition. Reading each range in a task of its own makes a batch
cost grow with the partition count even when the data does not: a task, a Kafka reader and an
output file per partition, also for the many partitions with nothing to read. Instead the
ranges are packed into at most ``max_tasks`` tasks (the cluster's parallelism by default, like
the number of input splits of Spark's own sources), balanced by offsets to read; one task reads
all its partitions with one reader.

A range with nothing to read costs no task of its own: it rides along with a task that reads,
for its range row (the ledger row of every partition is written in every batch, read or not).
"""

from __future__ import annotations

from collections.abc import Mapping


def assign_read_tasks(offsets_to_read: Mapping[int, int], max_tasks: int) -> list[list[int]]:
    """Partitions per task, for ``offsets_to_read`` ({partition: offsets in its range}, >= 0).

    The partitions with offsets go to at most ``max_tasks`` tasks, the largest range first to the
    task with the fewest offsets so far (ties: the lower task), so no task holds much more than
    the largest range above its share. The partitions with none are dealt round-robin over the
    tasks. No task is empty; at least one task when there is any partition (a batch where no
    partition reads still writes every partition's ledger row). Deterministic: the same input
    gives the same tasks, each listing its partitions in ascending order.
    """
    if max_tasks < 1:
        raise ValueError(f"max_tasks must be >= 1, got {max_tasks}")
    if not offsets_to_read:
        return []
    reading = sorted((p for p, count in offsets_to_read.items() if count > 0), key=lambda p: (-offsets_to_read[p], p))
    idle = sorted(p for p, count in offsets_to_read.items() if count <= 0)
    tasks: list[list[int]] = [[] for _ in range(max(1, min(max_tasks, len(reading))))]
    loads = [0] * len(tasks)
    for partition in reading:
        lightest = min(range(len(tasks)), key=lambda task: (loads[task], task))
        tasks[lightest].append(partition)
        loads[lightest] += offsets_to_read[partition]
    for position, partition in enumerate(idle):
        tasks[position % len(tasks)].append(partition)
    return [sorted(task) for task in tasks]
