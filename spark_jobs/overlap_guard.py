"""Tells the live writer when its ranges may hold records the lake already has.

The live job writes its replayed batch insert-only (spark_jobs.persist_batch), which protects
against its own replays only. Two other writers can have written the offsets it is about to
write:

- recovery and backfill runs, which leave ledger rows with their mode;
- the live job itself before its checkpoint was lost: after a resume from the ledger, offsets
  from the ledger's position up to the last offset the tables hold may be there already (a crash
  between the events commit and the ledger commit leaves exactly that).

A batch whose ranges overlap either is written insert-only; every other batch stays a plain
append. The ledger rows of the other writers are read once and kept; each batch then only
looks at the ledger's newest commits (their writer is the commit's user metadata, see
LakeTables.append) and reads those rows again when another writer committed since. A
query of the ledger per batch cost the live job about 0.65 s a batch (benchmarks/
catch_up_side_by_side.py); the commit history costs a fraction of that.
"""

from __future__ import annotations

import logging

log = logging.getLogger("tidemark.persist")

# How many of the ledger's newest commits a batch looks at: the live job commits one a batch,
# so more than this since the last batch means other writers were busy: read their rows again.
HISTORY_WINDOW = 20


class OverlapGuard:
    def __init__(self, tables, resumed_zone: dict[int, tuple[int, int]] | None = None, ledger_created: bool = False):
        """``tables``: spark_jobs.lake_tables.LakeTables (``recent_commits``, ``non_live_ranges``).
        ``resumed_zone``: {partition: (start, end)} offsets a run before a lost checkpoint may
        have written beyond the ledger's position (see spark_jobs.lake_resume).
        ``ledger_created``: this run created the ledger (its commit 0): no other writer's rows
        are in it but those committed since, so it is not read (on a fresh lake that read was
        the first batch's slowest step)."""
        self._tables = tables
        self._resumed_zone = dict(resumed_zone or {})
        self._other_ranges: list[tuple[int, int, int]] | None = [] if ledger_created else None  # (partition, start, end)
        self._seen_version = 0 if ledger_created else -1

    def overlaps(self, ranges: dict[int, tuple[int, int]], own_writer: str) -> bool:
        """True when any of ``ranges`` ({partition: (start, end)}) may already be in the lake.
        ``own_writer``: the live job's writer id (its commits' user metadata)."""
        if not ranges:
            return False
        if any(_intersect(ranges.get(p), zone) for p, zone in self._resumed_zone.items()):
            return True
        self._refresh(own_writer)
        return any(_intersect(ranges.get(p), (start, end)) for p, start, end in self._other_ranges)

    def may_overlap_any(self, own_writer: str) -> bool:
        """True when another writer's ranges or a resumed zone exist at all: what can be said of
        a batch whose ranges are not known before it is read (a checkpoint's first batch)."""
        self._refresh(own_writer)
        return bool(self._resumed_zone or self._other_ranges)

    def _refresh(self, own_writer: str) -> None:
        """Read the other writers' ledger ranges again unless every commit since the last read
        is the live job's own. Versions are taken before the rows are read: a commit landing in
        between is looked at again next time, never missed."""
        commits = self._tables.recent_commits("ledger", HISTORY_WINDOW)  # [(version, writer)], newest first
        unseen = [(version, writer) for version, writer in commits if version > self._seen_version]
        window_reaches_back = not unseen or min(version for version, _ in unseen) == self._seen_version + 1
        foreign = any(writer != own_writer for _, writer in unseen)
        if self._other_ranges is None or foreign or not window_reaches_back:
            self._other_ranges = self._tables.non_live_ranges()
        if commits:
            self._seen_version = commits[0][0]


def _intersect(a: tuple[int, int] | None, b: tuple[int, int]) -> bool:
    return a is not None and a[0] < b[1] and b[0] < a[1]
