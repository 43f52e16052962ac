"""Record-count slicing: how far each partition may read in one batch when only a row budget limits it.

This is the planner used when log timestamps are not event times (so the log's time index cannot
plan event-time slices). It shares a batch's row budget fairly: partitions with a small backlog
take all of it, the rest split what is left evenly, so a heavy partition cannot starve a slow one
and every partition with a backlog reads at least something whenever the budget allows.
"""

from collections.abc import Mapping

from tidemark.log_position import position_after, records_between


def plan_record_count_slices(
    positions: Mapping[int, int], log_ends: Mapping[int, int], max_records: int | None, index: object = None
) -> dict[int, int]:
    """Return the end position (exclusive) of each partition's next slice.

    ``positions`` are the next positions to read, ``log_ends`` the logs' end positions. With
    ``max_records`` None every partition reads to its log end; otherwise the slices hold at most
    ``max_records`` records in total, as ``index`` counts them (tidemark.log_position: a log
    with sparse positions counts what it holds; None or a dense log: offsets). Ends never move
    backwards and never pass the log end.
    """
    ends_wanted = {p: max(log_ends.get(p, positions[p]), positions[p]) for p in positions}
    if max_records is None:
        return ends_wanted
    backlogs = {p: records_between(index, p, positions[p], ends_wanted[p]) for p in positions}
    if sum(backlogs.values()) <= max_records:
        return ends_wanted
    if max_records < 1:
        raise ValueError(f"max_records must be >= 1, got {max_records}")

    # Water-filling: serve the smallest backlogs first so their unused share goes to the others.
    remaining = max_records
    by_backlog = sorted(positions, key=lambda p: (backlogs[p], p))
    ends = {}
    for served, partition in enumerate(by_backlog):
        share = remaining // (len(by_backlog) - served)
        take = min(backlogs[partition], share)
        ends[partition] = (
            ends_wanted[partition]
            if take == backlogs[partition]
            else position_after(index, partition, positions[partition], take)
        )
        remaining -= take
    return ends
