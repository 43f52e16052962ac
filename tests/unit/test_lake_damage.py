"""Which Delta commits are damage to checked hours, and which hours they touch (expectations.lake_damage).

The commit texts follow what delta-spark 4.4 writes (seen in its logs): a DELETE's removes carry
no stats, an OPTIMIZE's removes carry numRecords only, adds carry numRecords and min/max values.
"""

from __future__ import annotations

import json

import pytest

from expectations.lake_damage import (
    DamageKind,
    FileFootprint,
    commit_damage,
    log_damage,
    log_gone,
    parse_commit,
    partition_hour,
    touched_hours,
    uncounted_removes,
)
from expectations.ledger_entries import LedgerEntry
from tidemark.event_time_text import parse_event_time

HOUR = 3_600_000
H = parse_event_time("2026-11-22T01:00:00Z")
SEALED = [H - HOUR, H, H + HOUR]
COMMITTED = parse_event_time("2026-11-25T23:10:01Z")


def _info(operation: str, **metrics) -> dict:
    return {
        "commitInfo": {
            "timestamp": COMMITTED,
            "operation": operation,
            "operationParameters": {},
            "operationMetrics": {k: str(v) for k, v in metrics.items()},
        }
    }


def _hour_values(hour_ms: int) -> dict:
    return {"event_date": "2026-11-22", "event_hour": str((hour_ms - parse_event_time("2026-11-22T00:00:00Z")) // HOUR)}


def _add(path: str, records: int | None, data_change: bool = True, values: dict | None = None, **minmax) -> dict:
    stats = None
    if records is not None:
        stats = {"numRecords": records}
        if minmax:
            stats |= {
                "minValues": {k: v[0] for k, v in minmax.items()},
                "maxValues": {k: v[1] for k, v in minmax.items()},
            }
    return {
        "add": {
            "path": path,
            "partitionValues": values or {},
            "size": 1,
            "modificationTime": 0,
            "dataChange": data_change,
            "stats": json.dumps(stats) if stats else None,
        }
    }


def _remove(path: str, data_change: bool = True, records: int | None = None, values: dict | None = None) -> dict:
    action = {"path": path, "partitionValues": values or {}, "dataChange": data_change, "deletionTimestamp": COMMITTED}
    if records is not None:
        action["stats"] = json.dumps({"numRecords": records})
    return {"remove": action}


def _commit(table: str, version: int, *actions: dict):
    return parse_commit(table, version, "\n".join(json.dumps(a) for a in actions) + "\n")


def _entry(partition: int, start: int, end: int, first_ms: int, last_ms: int) -> LedgerEntry:
    return LedgerEntry(1, partition, "live", start, end, end, end - start, first_ms, last_ms, None, None, None)


def test_appends_and_insert_only_merges_are_no_damage():
    append = _commit(
        "events",
        3,
        _info("WRITE", numOutputRows=50),
        _add("event_date=2026-11-22/event_hour=1/a.parquet", 50, values=_hour_values(H)),
    )
    merge = _commit(
        "events",
        4,
        _info("MERGE", numTargetRowsInserted=3, numTargetRowsDeleted=0),
        _add("event_date=2026-11-22/event_hour=1/b.parquet", 3, values=_hour_values(H)),
    )
    assert commit_damage(append) == [] and commit_damage(merge) == []


def test_a_delete_names_its_operation_its_rows_and_the_hours_of_the_partitions_it_touched():
    commit = _commit(
        "events",
        7,
        _info("DELETE", numDeletedRows=3, numCopiedRows=47),
        _remove("event_date=2026-11-22/event_hour=1/part-1.parquet", values=_hour_values(H)),
        _add("event_date=2026-11-22/event_hour=1/part-2.parquet", 47, values=_hour_values(H)),
    )
    (damage,) = commit_damage(commit)
    assert (damage.table, damage.version, damage.operation, damage.kind, damage.rows) == (
        "events",
        7,
        "DELETE",
        DamageKind.ROWS_REMOVED,
        3,
    )
    lake = touched_hours(damage, SEALED, [])
    assert lake.hours_ms == (H,)
    assert lake.sentence() == "DELETE (events version 7, 2026-11-25T23:10:01.000Z) removed or rewrote 3 rows"
    assert lake.to_json()["hours"] == ["2026-11-22T01:00:00Z"]


@pytest.mark.parametrize(
    "operation, metrics, rows",
    [
        ("UPDATE", {"numUpdatedRows": 5}, 5),
        ("MERGE", {"numTargetRowsDeleted": 2, "numTargetRowsUpdated": 1, "numTargetRowsInserted": 9}, 3),
        ("RESTORE", {"numRemovedFiles": 1}, None),
        ("WRITE", {"numOutputRows": 10}, None),  # an overwrite or a replaceWhere
        ("TRUNCATE", {}, None),
    ],
)
def test_every_operation_that_removes_files_with_a_data_change_is_damage(operation, metrics, rows):
    commit = _commit(
        "events",
        9,
        _info(operation, **metrics),
        _remove("event_date=2026-11-22/event_hour=0/x.parquet", values=_hour_values(H - HOUR)),
    )
    (damage,) = commit_damage(commit)
    assert (damage.operation, damage.kind, damage.rows) == (operation, DamageKind.ROWS_REMOVED, rows)
    assert touched_hours(damage, SEALED, []).hours_ms == (H - HOUR,)


def test_an_erasures_delete_is_named_an_erasure_and_its_hours_are_checked_again():
    info = _info("MERGE", numTargetRowsDeleted=4)
    info["commitInfo"]["userMetadata"] = "erasure:9f2c"
    commit = _commit(
        "events", 11, info, _remove("event_date=2026-11-22/event_hour=1/e.parquet", values=_hour_values(H))
    )

    (damage,) = commit_damage(commit)

    assert (damage.kind, damage.rows) == (DamageKind.ERASURE, 4)
    lake = touched_hours(damage, SEALED, [])
    assert lake.hours_ms == (H,)
    assert lake.sentence() == (
        "MERGE (events version 11, 2026-11-25T23:10:01.000Z) erased 4 rows "
        "(tidemark erase: recorded in the erasures table, not damage)"
    )


def test_a_compaction_that_keeps_every_row_is_no_damage_and_one_that_drops_rows_is():
    values = _hour_values(H)
    keeps = _commit(
        "events",
        5,
        _info("OPTIMIZE"),
        _remove("p/a", False, 4, values),
        _remove("p/b", False, 5, values),
        _add("p/c", 9, data_change=False, values=values),
    )
    assert commit_damage(keeps) == [], "a compaction that only rewrites raises nothing"

    drops = _commit(
        "events",
        6,
        _info("OPTIMIZE"),
        _remove("p/a", False, 4, values),
        _remove("p/b", False, 5, values),
        _add("p/c", 7, data_change=False, values=values),
        _remove("q/a", False, 5, _hour_values(H + HOUR)),
        _add("q/b", 5, False, _hour_values(H + HOUR)),
    )
    (damage,) = commit_damage(drops)
    assert (damage.operation, damage.kind, damage.rows) == ("OPTIMIZE", DamageKind.ROWS_DROPPED, 2)
    assert touched_hours(damage, SEALED, []).hours_ms == (H,), "only the partition that lost rows"


def test_a_rewrite_whose_removes_carry_no_stats_is_counted_from_earlier_adds_or_rechecked():
    values = _hour_values(H)
    rewrite = _commit("events", 8, _info("WRITE"), _remove("p/a", False, None, values), _add("p/b", 10, False, values))
    assert commit_damage(rewrite, {"p/a": 10}) == [], "the add's count is known: a plain rewrite"
    (uncounted,) = commit_damage(rewrite)
    assert (uncounted.kind, uncounted.rows) == (DamageKind.UNCOUNTED_REWRITE, None)

    first = _commit("events", 7, _info("WRITE"), _add("p/a", 12, values=values))
    (dropped,) = log_damage([rewrite, first])
    assert (dropped.version, dropped.kind, dropped.rows) == (8, DamageKind.ROWS_DROPPED, 2), (
        "counted from version 7's add"
    )
    assert uncounted_removes([rewrite]) == ["p/a"], "the adapter counts this file's rows"
    assert uncounted_removes([first, rewrite]) == [], "version 7's add counts them"


def test_a_delete_in_the_late_table_touches_the_hours_of_the_removed_files_event_times():
    within = ("2026-11-22T01:10:00.000Z", "2026-11-22T02:00:00.000Z")  # the last row at 02:00:00.000 exactly
    add = _commit(
        "late",
        2,
        _info("WRITE"),
        _add("late-a.parquet", 5, event_time=within, source_partition=(0, 1), source_offset=(3, 8)),
    )
    delete = _commit("late", 3, _info("DELETE", numDeletedRows=1), _remove("late-a.parquet"))
    (damage,) = log_damage([add, delete])
    assert touched_hours(damage, SEALED, []).hours_ms == (H, H + HOUR), "from the add's stats within the versions read"
    read = {"late-a.parquet": FileFootprint(event_time_ms=(H + 10 * 60_000, H + 20 * 60_000))}
    assert touched_hours(damage, SEALED, [], read).hours_ms == (H,), "the rows read from the file win over stats"
    (unknown,) = commit_damage(delete)
    assert touched_hours(unknown, SEALED, []).hours_ms == tuple(SEALED), "no footprint at all: every sealed hour"


def test_a_delete_in_the_quarantine_table_touches_the_hours_of_the_ledger_ranges_that_held_its_offsets():
    entries = [
        _entry(0, 0, 50, H - HOUR + 1, H - 1),
        _entry(0, 50, 100, H, H + HOUR - 1),
        _entry(1, 0, 40, H, H + 2 * HOUR - 1),
    ]
    delete = _commit("quarantine", 4, _info("DELETE", numDeletedRows=1), _remove("q.parquet"))
    (damage,) = commit_damage(delete)
    read = {"q.parquet": FileFootprint(offsets=((0, 60, 61),))}
    assert touched_hours(damage, SEALED, entries, read).hours_ms == (H,)
    read = {"q.parquet": FileFootprint(offsets=((1, 5, 5), (0, 10, 10)))}
    assert touched_hours(damage, SEALED, entries, read).hours_ms == (H - HOUR, H, H + HOUR)


def test_only_sealed_hours_are_touched_and_a_gone_log_touches_every_one():
    commit = _commit("events", 2, _info("DELETE"), _remove("p", values=_hour_values(H + 5 * HOUR)))
    (damage,) = commit_damage(commit)
    assert touched_hours(damage, SEALED, []).hours_ms == (), "an hour not sealed yet is checked when it seals"
    gone = touched_hours(log_gone("events", "LOG CLEANUP"), SEALED, [])
    assert (gone.kind, gone.hours_ms, gone.version) == (DamageKind.LOG_GONE, tuple(SEALED), None)
    assert gone.sentence() == "LOG CLEANUP (events) hides what changed: the log no longer tells"


def test_partition_values_name_an_hour_or_nothing():
    assert partition_hour({"event_date": "2026-11-22", "event_hour": "1"}) == H
    assert partition_hour({"event_date": "2026-11-22", "event_hour": None}) is None
    assert partition_hour({}) is None
    assert partition_hour({"event_date": "yesterday", "event_hour": "1"}) is None


def test_paths_are_decoded_and_a_commit_without_commit_info_is_unknown():
    commit = parse_commit("events", 1, json.dumps(_remove("event_date=2026-11-22/a%20b.parquet")) + "\n\n")
    assert commit.operation == "UNKNOWN" and commit.removed[0].path == "event_date=2026-11-22/a b.parquet"


def test_the_versions_since_the_last_check_are_read_or_the_log_is_gone():
    from expectations.delta_log import versions_to_read

    assert versions_to_read([0, 1, 2, 3], 1) == range(2, 4)
    assert versions_to_read([0, 1, 2, 3], 3) == range(0), "nothing new"
    assert versions_to_read([0, 1, 2, 3], None) == range(0), "no state yet: start at the newest"
    assert versions_to_read([30, 31, 32], 12) == "LOG CLEANED UP (version 13 is no longer in the log)"
    assert versions_to_read([0, 1], 5) == "TABLE REPLACED (newest version 1, checked up to 5)"


def test_a_missing_files_partition_values_come_from_its_path():
    from expectations.delta_log import partition_values_of

    assert partition_values_of("event_date=2026-11-22/event_hour=1/part-0.parquet") == (
        ("event_date", "2026-11-22"),
        ("event_hour", "1"),
    )
    assert partition_values_of("part-0.parquet") == ()
