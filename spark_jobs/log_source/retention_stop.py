"""Why the source stopped the query, handed to the driver: the offsets retention took.

The source plans in a Python worker of its own, so the RetentionLossError it raises reaches the
driver only as the text of a StreamingQueryException. Before raising, it writes the exact lost
ranges (tidemark.retention_loss.LostOffsets, as JSON) beside the planner feedback; the driver
reads them when the query fails, and the job exits 3 naming them, as recovery and backfill do
for offsets lost to retention. A typed value, not a traceback read for a class name.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from tidemark.retention_loss import LostOffsets

_FILE = "retention_loss.json"


def write_lost_offsets(folder: str, lost: tuple[LostOffsets, ...]) -> None:
    directory = Path(folder)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / _FILE).write_bytes(msgspec.json.encode(list(lost)))


def read_lost_offsets(folder: str) -> tuple[LostOffsets, ...]:
    """The ranges the source stopped for in this run; () when it did not stop for retention."""
    try:
        return tuple(msgspec.json.decode((Path(folder) / _FILE).read_bytes(), type=list[LostOffsets]))
    except FileNotFoundError:
        return ()


def clear_lost_offsets(folder: str) -> None:
    """Forget an earlier run's stop: called before a run starts its query."""
    (Path(folder) / _FILE).unlink(missing_ok=True)
