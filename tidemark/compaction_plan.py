"""Which event-time hours of the events table a maintenance run compacts.

An hour is compacted when it is sealed (the live job writes no more of its records: a record of
a sealed hour is late, and goes to the late table) and its files have gathered to
``min_files`` or more. Hours still being written are never compacted: a compaction there would
race every live batch for nothing, since the next batch adds a file again.

Hours are epoch milliseconds of their start (UTC, aligned to the hour). Oldest first: the
oldest hours have gathered longest and are read by the sweep and by backfills comparing with live.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

HOUR_MS = 3_600_000


def hours_to_compact(files_per_hour: Mapping[int, int], sealed_hours: Iterable[int], min_files: int) -> list[int]:
    """The sealed hours whose file count is at least ``min_files``, oldest first."""
    sealed = set(sealed_hours)
    return sorted(hour for hour, files in files_per_hour.items() if hour in sealed and files >= min_files)
