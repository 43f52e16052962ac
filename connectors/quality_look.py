"""The look before a family's quality tick: each member's watched tables' versions (deltalake, no
Spark), its last check's memory, and the persist look at its log (connectors.family_look, one
Kafka client for all topics, in a process stopped at a deadline: connectors.bounded_family_look),
judged by tidemark.quality_look."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from tidemark.quality_look import WATCHED_TABLES, check_reason, read_last_check
from tidemark.stream_config import StreamConfig


def table_versions(stream: StreamConfig) -> dict[str, int]:
    """The version of each watched table of ``stream`` now; -1 for a table that does not exist."""
    from deltalake.exceptions import TableNotFoundError

    from connectors.lake_storage import open_delta_table

    versions = {}
    for table in WATCHED_TABLES:
        try:
            versions[table] = open_delta_table(stream.table_path(table)).version()
        except TableNotFoundError:
            versions[table] = -1
    return versions


def members_to_check(
    streams: Sequence[StreamConfig], report_dir: str | Path, hours_asked: Mapping[str, Sequence[str]]
) -> dict[str, tuple[str | None, dict[str, int]]]:
    """Each member's reason to be checked now (None: its last answer stands) and its watched
    tables' versions now (empty when they could not be read), by name."""
    from connectors.bounded_family_look import look_before_persisting_family_bounded

    looks = look_before_persisting_family_bounded(streams)
    reasons = {}
    for stream in streams:
        try:
            versions = table_versions(stream)
        except Exception as error:  # noqa: BLE001 - a table that cannot be read: the check says how
            reasons[stream.name] = (f"its tables could not be read ({type(error).__name__})", {})
            continue
        look = looks[stream.name]
        reason = check_reason(
            read_last_check(report_dir, stream.name),
            versions,
            None if look.nothing_new else look.reason,
            len(hours_asked.get(stream.name, ())),
        )
        reasons[stream.name] = (reason, versions)
    return reasons
