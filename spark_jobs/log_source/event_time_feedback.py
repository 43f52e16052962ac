"""The persist job tells the source planner each batch's result: W_p per partition after it.

Spark gives a Python source no view of what its batches produced, and the planner needs W_p
(from the decoded event times) to plan the next batch. So the batch function writes one small
JSON file per planned batch, named by the plan's sequence number, and the planner reads it when
planning the next. It runs before Spark commits the batch, so a replayed batch rewrites the same
file. A missing file (the folder lost with the driver's disk) only makes the planner
conservative: W_p then rises by the time index alone, and no record is misrouted.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

# Enough for a planner that restarts to find its last batch; older files are pruned.
_KEEP = 20


def write_feedback(folder: str, plan_seq: int, watermarks: dict[int, int | None]) -> None:
    directory = Path(folder)
    directory.mkdir(parents=True, exist_ok=True)
    temporary = directory / f".{plan_seq}.json.tmp"
    temporary.write_text(json.dumps({str(p): w for p, w in watermarks.items()}))
    os.replace(temporary, directory / f"{plan_seq}.json")  # atomic: the planner never reads half a file
    for old in sorted(directory.glob("*.json"), key=lambda f: int(f.stem))[:-_KEEP]:
        old.unlink(missing_ok=True)


def read_feedback(folder: str, plan_seq: int) -> dict[int, int | None] | None:
    """W_p per partition after the batch ``plan_seq``; None when there is no such file."""
    try:
        data = json.loads((Path(folder) / f"{plan_seq}.json").read_text())
    except FileNotFoundError:
        return None
    return {int(p): w for p, w in data.items()}
