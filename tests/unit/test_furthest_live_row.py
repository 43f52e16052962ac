"""The furthest live ledger row of a partition: one rule for the live job's resume, the persist
look and the quality checks (tidemark.furthest_live_row)."""

from __future__ import annotations

from datetime import UTC, datetime

from tidemark.furthest_live_row import FURTHEST_FIRST, furthest_key, furthest_per_partition


def _row(partition: int, end: int, read_s: int | None, step: int | None) -> dict:
    read = None if read_s is None else datetime.fromtimestamp(read_s, UTC)
    return {"source_partition": partition, "end_offset": end, "read_time": read, "step_id": step}


def _furthest(rows: list[dict]) -> dict[int, dict]:
    return furthest_per_partition(
        rows,
        partition=lambda row: row["source_partition"],
        key=lambda row: furthest_key(row["end_offset"], row["read_time"], row["step_id"]),
    )


def test_the_largest_end_wins_even_over_a_later_read():
    older_further, newer_behind = _row(0, 50, 100, 1), _row(0, 40, 200, 2)
    assert _furthest([older_further, newer_behind]) == {0: older_further}


def test_at_the_same_end_the_last_read_wins_then_the_largest_step():
    # An idle partition: its end stays, its rows go on being read; the newest carries its status.
    first, idle_later, same_moment_later_step = _row(3, 50, 100, 7), _row(3, 50, 160, 8), _row(3, 50, 160, 9)
    assert _furthest([idle_later, first, same_moment_later_step]) == {3: same_moment_later_step}


def test_a_missing_read_time_or_step_ranks_below_any_present_one_as_spark_sorts_nulls_last():
    unknown_read, known_read = _row(1, 10, None, 5), _row(1, 10, 1, 4)
    assert _furthest([known_read, unknown_read]) == {1: known_read}
    unknown_step, known_step = _row(2, 10, 1, None), _row(2, 10, 1, 0)
    assert _furthest([unknown_step, known_step]) == {2: known_step}


def test_partitions_are_ranked_apart_and_a_partition_without_rows_is_absent():
    rows = [_row(0, 5, 1, 1), _row(1, 9, 1, 1), _row(0, 6, 1, 2)]
    assert _furthest(rows) == {0: rows[2], 1: rows[1]}
    assert _furthest([]) == {}


def test_read_times_in_milliseconds_rank_as_datetimes_do():
    assert furthest_key(7, 1_500, 1) > furthest_key(7, 1_000, 9)
    assert furthest_key(7, datetime.fromtimestamp(1.5, UTC), 1) == furthest_key(7, 1_500, 1)


def test_spark_orders_by_the_ledger_columns_the_key_ranks():
    assert FURTHEST_FIRST == ("end_offset", "read_time", "step_id")
