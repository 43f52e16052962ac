"""What a maintenance run would find, read without Spark: an idle stream's hourly maintenance
starts no JVM (DESIGN.md: idle costs nothing).

Three questions, each answered from the Delta logs with ``deltalake``:

- **compaction**: a sealed hour of events with ``maintenance.compact_min_files`` files or more
  (tidemark.compaction_plan; the files per hour from the log's add actions, the sealed hours from
  the seals table), or a ledger or seals table with as many;
- **claims**: a released claim waiting to be settled (tidemark.claims_settlement: a release row;
  a dead claim is settled only with released claims, so it waits for one too);
- **VACUUM**: a file a commit removed longer ago than the table's retention
  (``delta.deletedFileRetentionDuration``), still in storage: deltalake's dry run lists the
  removed files, and the storage says which are still there.

``look_before_maintaining`` never raises for the lake's sake: what it cannot read makes it run
the job, naming what and why. It errs towards running: deltalake's dry run knows the files the log
removed, not files no commit ever added (a writer that died mid-write); those wait for a run that
has other work.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

from connectors.error_line import one_line
from tidemark.claims_settlement import RELEASED
from tidemark.compaction_plan import HOUR_MS, hours_to_compact
from tidemark.stream_config import StreamConfig

# The small tables every reader opens whole, compacted whole (spark_jobs.maintenance.compaction).
SMALL_TABLES = ("ledger", "seals")
# Every table a maintenance run vacuums (spark_jobs.maintenance.vacuum).
VACUUMED = ("events", "late", "quarantine", "ledger", "seals", "claims", "erasures", "offline_devices")


@dataclass(frozen=True)
class MaintenanceLook:
    """``nothing_to_do`` and the one sentence that says why, or what there is to do."""

    nothing_to_do: bool
    reason: str


def look_before_maintaining(stream: StreamConfig) -> MaintenanceLook:
    from connectors.lake_storage import is_delta_table

    try:
        if not is_delta_table(stream.table_path("events")):
            # What the job would answer, without its JVM: a stream whose topic never had a run
            # (or is gone) must not start a driver every hour to say it.
            return MaintenanceLook(
                True, "no events table yet: nothing to maintain before the stream's first persist run"
            )
        due = hours_to_compact(
            files_per_hour(stream.table_path("events")), sealed_hours(stream), stream.maintenance.compact_min_files
        )
        if due:
            return MaintenanceLook(False, f"{len(due)} sealed hours of events to compact")
        for table in SMALL_TABLES:
            files = table_files(stream.table_path(table))
            if files >= stream.maintenance.compact_min_files:
                return MaintenanceLook(False, f"{files} files of {table} to compact")
        if released_claims(stream):
            return MaintenanceLook(False, "released claims to settle")
        for table in VACUUMED:
            files = vacuumable_files(stream.table_path(table))
            if files:
                return MaintenanceLook(False, f"{files} files of {table} older than its retention to vacuum")
    except Exception as error:  # the job decides, not a guess
        return MaintenanceLook(False, f"could not look at the lake ({one_line(error)})")
    return MaintenanceLook(
        True,
        "no sealed hour or small table to compact, no claim to settle, no file older than its table's retention "
        "to vacuum",
    )


def table_files(path: str) -> int:
    """The data files of the table at ``path`` now (0: no table)."""
    from connectors.lake_storage import is_delta_table, open_delta_table

    if not is_delta_table(path):
        return 0
    return len(open_delta_table(path).file_uris())


def files_per_hour(events_path: str) -> dict[int, int]:
    """How many files each event-time hour (ms) of the events table holds now."""
    import pyarrow as pa

    from connectors.lake_storage import open_delta_table

    actions = pa.table(open_delta_table(events_path).get_add_actions(flatten=True))
    counts: dict[int, int] = {}
    for day, hour in zip(
        actions.column("partition.event_date").to_pylist(),
        actions.column("partition.event_hour").to_pylist(),
        strict=True,
    ):
        start = _hour_ms(day, hour)
        counts[start] = counts.get(start, 0) + 1
    return counts


def sealed_hours(stream: StreamConfig) -> list[int]:
    """The sealed hours' starts (ms), from the seals table."""
    from connectors.lake_storage import open_delta_table

    hours = open_delta_table(stream.table_path("seals")).to_pyarrow_table(columns=["hour"]).column("hour")
    return sorted({int(value.timestamp() * 1000) for value in hours.to_pylist() if value is not None})


def released_claims(stream: StreamConfig) -> int:
    """Release rows in the stream's claims table (0: none, or no table)."""
    from connectors.lake_storage import is_delta_table, open_delta_table

    path = stream.table_path("claims")
    if not is_delta_table(path):
        return 0
    return open_delta_table(path).to_pyarrow_table(columns=["mode"], filters=[("mode", "=", RELEASED)]).num_rows


def vacuumable_files(path: str) -> int:
    """Files VACUUM would delete from the table at ``path`` now, with its own retention (0: none,
    or no table)."""
    from pyarrow import fs

    from connectors.lake_files import lake_filesystem
    from connectors.lake_storage import is_delta_table, open_delta_table

    if not is_delta_table(path):
        return 0
    # The dry run lists every file removed longer ago than the retention, also those a VACUUM
    # already deleted (their removes stay in the log until its cleanup): only files still there count.
    removed = open_delta_table(path).vacuum(dry_run=True, enforce_retention_duration=False)
    if not removed:
        return 0
    filesystem, root = lake_filesystem(path)
    found = filesystem.get_file_info([f"{root}/{name}" for name in removed])
    return sum(1 for info in found if info.type != fs.FileType.NotFound)


def _hour_ms(day: date, hour: int) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000) + hour * HOUR_MS
