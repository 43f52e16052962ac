"""Tells the live writer when its ranges may hold records the lake already has.

The live job's idempotent append (txnAppId = its query id) protects against its own replays
only. Two other writers can have written the offsets it is about to write:

- recovery and backfill runs, which leave ledger rows with their mode;
- the live job itself before its checkpoint was lost: after a resume from the ledger, offsets
  from the ledger's position up to the last offset the tables hold may be there already (a crash
  between the events commit and the ledger commit leaves exactly that).

A batch whose ranges overlap either is written insert-only; every other batch stays a plain
append, so the common case pays one small ledger query per batch and nothing else.
"""

from __future__ import annotations

import logging

log = logging.getLogger("tidemark.persist")


class OverlapGuard:
    def __init__(self, tables, resumed_zone: dict[int, tuple[int, int]] | None = None):
        """``resumed_zone``: {partition: (start, end)} offsets a run before a lost checkpoint
        may have written beyond the ledger's position (see spark_jobs.lake_resume)."""
        self._tables = tables
        self._resumed_zone = dict(resumed_zone or {})

    def overlaps(self, ranges: dict[int, tuple[int, int]]) -> bool:
        """True when any of ``ranges`` ({partition: (start, end)}) may already be in the lake."""
        if not ranges:
            return False
        if any(_intersect(ranges.get(p), zone) for p, zone in self._resumed_zone.items()):
            return True
        return self._other_writers_overlap(ranges)

    def _other_writers_overlap(self, ranges: dict[int, tuple[int, int]]) -> bool:
        from functools import reduce

        from pyspark.sql import functions as F

        overlapping = reduce(
            lambda either, bound: either | bound,
            [
                (F.col("source_partition") == p) & (F.col("start_offset") < end) & (F.col("end_offset") > start)
                for p, (start, end) in sorted(ranges.items())
            ],
        )
        ledger = self._tables.read("ledger")
        return not ledger.where((F.col("mode") != "live") & overlapping).limit(1).isEmpty()


def _intersect(a: tuple[int, int] | None, b: tuple[int, int]) -> bool:
    return a is not None and a[0] < b[1] and b[0] < a[1]
