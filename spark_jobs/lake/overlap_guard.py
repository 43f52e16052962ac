"""Tells the live writer which of its offsets other writers have written or claimed.

The live job writes its replayed batch insert-only (spark_jobs.persist.batch), which protects
against its own replays only. Other writers touch the offsets it is about to write:

- recovery and backfill runs claim their ranges before they write (tidemark.write_claims): a
  claimed offset is theirs, and the live job leaves it out of its batch;
- recovery and backfill runs of a lake written before claims existed left only ledger rows with
  their mode: a batch overlapping those is written insert-only;
- the live job itself before its checkpoint was lost: after a resume from the ledger, offsets
  from the ledger's position up to the last offset the tables hold may be there already (a crash
  between the events commit and the ledger commit leaves exactly that): insert-only too.

The claims are read again only when the claims table has a new version: each batch asks for the
newest version (a look at its log), which costs a fraction of reading the rows. The claims a
batch sees are every claim committed before it decided how to write, which is what the claim
rules need.
"""

from __future__ import annotations

import logging

from tidemark.write_claims import ClaimedRange, covered_parts

log = logging.getLogger("tidemark.persist")


class OverlapGuard:
    def __init__(
        self, tables, claims, resumed_zone: dict[int, tuple[int, int]] | None = None, ledger_created: bool = False
    ):
        """``tables``: spark_jobs.lake.tables.LakeTables (``non_live_ranges``); ``claims``:
        spark_jobs.lake.claims_table.ClaimsTable of the same stream.
        ``resumed_zone``: {partition: (start, end)} offsets a run before a lost checkpoint may
        have written beyond the ledger's position (see spark_jobs.persist.lake_resume).
        ``ledger_created``: this run created the ledger: no other writer's ledger rows predate
        claims, so the ledger is not read (on a fresh lake that read was the first batch's
        slowest step)."""
        self._tables = tables
        self._claims_table = claims
        self._resumed_zone = dict(resumed_zone or {})
        self._unclaimed_ranges: list[tuple[int, int, int]] | None = (
            [] if ledger_created else None
        )  # (partition, start, end)
        self._claims: list[ClaimedRange] = []
        self._claims_version = -1

    def overlaps(
        self, ranges: dict[int, tuple[int, int]], claimed: dict[int, list[tuple[int, int]]] | None = None
    ) -> bool:
        """True when the unclaimed part of ``ranges`` ({partition: (start, end)}) may already be
        in the lake: it meets a resumed zone, or a range another writer wrote (the claimed part
        is left out of the batch, so the claimers' own ledger ranges do not count). ``claimed``:
        what ``claimed(ranges)`` just returned, if the caller has it (saves a look at the claims)."""
        if not ranges:
            return False
        claimed = self.claimed(ranges) if claimed is None else claimed
        unclaimed = [(p, lo, hi) for p, bound in ranges.items() for lo, hi in _without(bound, claimed.get(p, []))]
        if any(p in self._resumed_zone and _intersect((lo, hi), self._resumed_zone[p]) for p, lo, hi in unclaimed):
            return True
        return any(
            p == q and _intersect((lo, hi), (start, end))
            for p, lo, hi in unclaimed
            for q, start, end in self._ledger_ranges()
        )

    def claimed(self, ranges: dict[int, tuple[int, int]]) -> dict[int, list[tuple[int, int]]]:
        """The parts of ``ranges`` ({partition: (start, end)}) claimed by recovery or backfill
        runs, {partition: [(start, end)]}: not the live job's to write."""
        self._refresh_claims()
        return covered_parts(ranges, ((c.partition, c.start, c.end) for c in self._claims))

    def may_overlap_any(self) -> bool:
        """True when claims, a resumed zone or unclaimed ranges of other writers exist at all: what
        can be said of a batch whose ranges are not known before it is read (a checkpoint's
        first batch)."""
        self._refresh_claims()
        return bool(self._resumed_zone or self._claims or self._ledger_ranges())

    def _ledger_ranges(self) -> list[tuple[int, int, int]]:
        # Read once: every writer since claims exist claims before it writes its ledger rows.
        if self._unclaimed_ranges is None:
            self._unclaimed_ranges = self._tables.non_live_ranges()
        return self._unclaimed_ranges

    def _refresh_claims(self) -> None:
        # The claims table exists: the job ensured the stream's tables before its first batch.
        version = self._claims_table.latest_version()
        if version != self._claims_version:
            # Version 0 is the table's creation: nothing claimed yet, nothing to read.
            self._claims = self._claims_table.all_claims() if version > 0 else []
            self._claims_version = version


def _intersect(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _without(bound: tuple[int, int], spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """[start, end) of ``bound`` minus ``spans`` (sorted, disjoint, within it)."""
    parts, position = [], bound[0]
    for start, end in spans:
        if position < start:
            parts.append((position, start))
        position = max(position, end)
    return parts + ([(position, bound[1])] if position < bound[1] else [])
