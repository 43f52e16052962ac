"""The chaos switch's rule: a frozen partition is planned but never read.

A frozen partition keeps its position (nothing of it is read) while its log end, status and
W_p are planned as usual: the ledger then shows it as a stalled consumer leaves a partition,
read position constant while the log end grows. The stall alarms are tested with it
(TIDEMARK_CHAOS_FREEZE, spark_jobs.persist.pipeline); no production run sets it.

The switch is ``TIDEMARK_CHAOS_FREEZE=<stream>:<partition>[,...]``, or, when that is unset, the
same text in the file ``TIDEMARK_CHAOS_FREEZE_FILE`` names, while that file exists. The file is
the embedded stack's switch: `tidemark demo --incident` turns it on and off under a running
Airflow, whose tasks inherit an environment fixed when it started.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import Path

from tidemark.source_state import SourceState

FREEZE_VARIABLE = "TIDEMARK_CHAOS_FREEZE"
FREEZE_FILE_VARIABLE = "TIDEMARK_CHAOS_FREEZE_FILE"


def chaos_freeze_setting(environ: Mapping[str, str]) -> str:
    """The switch's text, stripped; '' when it is off (see the module)."""
    setting = environ.get(FREEZE_VARIABLE, "").strip()
    if setting or not environ.get(FREEZE_FILE_VARIABLE):
        return setting
    try:
        return Path(environ[FREEZE_FILE_VARIABLE]).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return ""


def freeze_partitions(previous: SourceState, planned: SourceState, frozen: Iterable[int]) -> SourceState:
    """``planned`` (the batch after ``previous``) with the ``frozen`` partitions left where
    ``previous`` had them: same position, no slice in any step, no "next record is >= T" bound
    (nothing of them was read). A frozen partition ``previous`` does not hold (just added) is
    planned as usual.

    Returns ``previous`` itself (no batch) when freezing leaves nothing to do: no position and
    no G moved, and no frozen partition's log end grew. A grown log end still makes a batch,
    since its ledger row is how the stall shows.
    """
    frozen = set(frozen)
    held = [p for p in sorted(frozen) if p in planned.partitions and p in previous.partitions]
    partitions = dict(planned.partitions)
    for partition in held:
        partitions[partition] = dataclasses.replace(
            partitions[partition], position=previous.partitions[partition].position, next_record_at_least_ms=None
        )
    steps = tuple(
        dataclasses.replace(step, ends={p: end for p, end in step.ends.items() if p not in frozen})
        for step in planned.steps
    )
    result = dataclasses.replace(planned, partitions=partitions, steps=steps)
    moved = result.positions() != previous.positions() or result.global_watermark_ms != previous.global_watermark_ms
    grew = any(partitions[p].log_end != previous.partitions[p].log_end for p in held)
    return result if moved or grew else previous
