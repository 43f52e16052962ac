"""Why the source stopped the query, handed to the driver: the positions retention took.

The source plans in a Python worker of its own, so the RetentionLossError it raises reaches the
driver only as the text of a StreamingQueryException. Before raising, it writes the exact lost
ranges (tidemark.retention_loss.LostRange, as JSON) beside the planner feedback; the driver
reads them when the query fails, and the job exits 3 naming them, as recovery and backfill do
for positions lost to retention. A typed value, not a traceback read for a class name.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from tidemark.retention_loss import LostRange

_FILE = "retention_loss.json"


def write_lost_ranges(folder: str, lost: tuple[LostRange, ...]) -> None:
    directory = Path(folder)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / _FILE).write_bytes(msgspec.json.encode(list(lost)))


def read_lost_ranges(folder: str) -> tuple[LostRange, ...]:
    """The ranges the source stopped for in this run; () when it did not stop for retention."""
    try:
        return tuple(msgspec.json.decode((Path(folder) / _FILE).read_bytes(), type=list[LostRange]))
    except FileNotFoundError:
        return ()


def clear_lost_ranges(folder: str) -> None:
    """Forget an earlier run's stop: called before a run starts its query."""
    (Path(folder) / _FILE).unlink(missing_ok=True)
