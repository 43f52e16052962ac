"""A run under a pinned G: recovery routes every record it reads under the G the live job had.

Pinning holds G at one value for the whole run, in the batch's state and in each of its aligned
steps, so no record read moves G and no hour is sealed by the run (the live job seals).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from tidemark.source_state import SourceState


def pin_global_watermark(
    previous: SourceState, planned: SourceState, log_ends: Mapping[int, int], pinned_ms: int
) -> SourceState:
    """``planned`` (the batch after ``previous``) with G = ``pinned_ms`` (ms since the epoch, UTC)
    in its state and in every step.

    Returns ``previous`` itself (no batch) when the run is done: no position moved and every
    partition is read to its end in ``log_ends`` ({partition: end offset}). The planner would
    plan a batch to move G, the pin would hold G back, and the next trigger would plan it again:
    a caught-up recovery wrote an empty batch a trigger until its partitions turned idle (446 of
    them, 3 minutes, in one test).
    """
    positions = previous.positions()
    if planned.positions() == positions and all(positions[p] >= end for p, end in log_ends.items()):
        return previous
    return dataclasses.replace(
        planned,
        global_watermark_ms=pinned_ms,
        steps=tuple(dataclasses.replace(step, global_watermark_ms=pinned_ms) for step in planned.steps),
    )
