"""Which live ledger row stands for a partition: its furthest one.

The live job resumes from it (spark_jobs.persist.lake_resume), the persist look judges "nothing
new" by it (connectors.persist_look), and the quality checks take a partition's position, status
and watermark from it (expectations.ledger_entries). One rule, so the three never disagree:

    a partition's furthest live row is its live row with the largest end position; among rows
    that end at the same position, the one read last; among those, the largest step id.

An idle partition writes rows whose end does not move and whose read time does: the newest of
them carries its current status and watermark. A missing read time or step id ranks below any
present one (as Spark sorts nulls last in a descending order).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TypeVar

# The ledger's columns that rank a partition's live rows, most significant first, each largest
# first: what Spark's window orders by (descending, nulls last).
FURTHEST_FIRST = ("end_offset", "read_time", "step_id")

Row = TypeVar("Row")
FurthestKey = tuple[int, tuple[int, float], int]


def furthest_key(end_position: int, read_time: datetime | int | None, step_id: int | None) -> FurthestKey:
    """The rank of one live row under the rule: a larger key is further.

    ``end_position``: the row's end as an int (an offset, or a sequence number's value);
    ``read_time``: a timezone-aware datetime or milliseconds since the epoch, None when unknown.
    """
    if read_time is None:
        read_rank = (0, 0.0)
    elif isinstance(read_time, datetime):
        read_rank = (1, read_time.timestamp())
    else:
        read_rank = (1, read_time / 1000)
    return (end_position, read_rank, -1 if step_id is None else step_id)


def furthest_per_partition(
    rows: Iterable[Row], partition: Callable[[Row], int], key: Callable[[Row], FurthestKey]
) -> dict[int, Row]:
    """Each partition's furthest row of ``rows`` (all of them live rows), ranked by ``key``
    (a ``furthest_key``). A partition without rows is absent."""
    furthest: dict[int, tuple[FurthestKey, Row]] = {}
    for row in rows:
        rank, where = key(row), partition(row)
        if where not in furthest or rank > furthest[where][0]:
            furthest[where] = (rank, row)
    return {where: row for where, (_, row) in furthest.items()}
