"""Claims: how the writers of one stream's tables never write a (partition, offset) twice.

Live, recovery and a backfill into ``events`` are separate drivers. Delta's optimistic
concurrency serialises two commits to *one* table that both read it (two insert-only MERGEs:
the second fails and retries against the first one's rows), but it cannot see across tables
(a record one writer routes to ``late`` and another to ``events``), and a plain append reads
nothing, so it never fails. Claims close both gaps:

1. Recovery and a backfill into ``events`` (the *claimers*) append their offset ranges to the
   stream's ``claims`` table before they write a record, each row with the G its offsets are
   routed under. The claims table's versions order all claims.
2. After its claim is committed, a claimer settles with the live job's batch in flight (planned
   in live's checkpoint and not committed) if it reads claimed offsets: live may have decided to
   write them before it could see the claim. The claimer waits for that batch while live's driver
   beats and yields (writes nothing, runs again later) when it cannot commit; the rule is
   tidemark.live_batch_wait. Then it writes every claimed offset insert-only (MERGE), routed
   under the G of the *earliest* claim covering the offset — its own or an older one.
3. The live job reads the claims before it writes each batch, and does not write an offset any
   claim covers: a claimer owns it. Live's plain appends therefore never meet a claimer's
   offsets, and every writer of a claimed offset routes it under the same G, so it lands in the
   same table, where Delta's conflict check lets only one insert of it commit.

The ordering argument, for an offset X and claim C: live decides its batch before C commits
(then the batch is pending or committed when C looks: C leaves X to live, or finds it written)
or after (then live sees C and skips X). Two claimers of X route it under one G (the earliest
claim's), so both MERGE into one table and Delta commits one insert.

A claimer that dies, or yields and is never run again, leaves its claim: the offsets stay
unwritten until the quality run finds the hole and recovery claims them again, routed under the
first claim's G. The claims table exists before any job can meet it: every job of the stream
makes its tables before its first batch (spark_jobs.lake.tables.LakeTables.ensure).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tidemark.live_routing import RoutedRange

# The G of a claim made when no live G existed (a lake live never wrote): nothing is late under
# it. A number, not None, so a routing range can carry it (Long.MIN_VALUE: below any event time).
NO_WATERMARK_MS = -(2**63)


@dataclass(frozen=True, order=True)
class ClaimedRange:
    """Offsets [start, end) of ``partition`` claimed at claims-table ``version`` by ``writer``,
    routed under ``global_watermark_ms`` (None: no G, nothing late)."""

    version: int
    partition: int
    start: int
    end: int
    global_watermark_ms: int | None
    writer: str


def claim_rows(
    ranges: dict[int, tuple[int, int]], live_routed: Iterable[RoutedRange], own_global_watermark_ms: int | None
) -> list[tuple[int, int, int, int | None]]:
    """The rows a claimer writes for ``ranges`` ({partition: (start, end)}): (partition, start,
    end, G), split where live already routed part of a range (``live_routed``: live's ledger
    ranges, their G kept) and ``own_global_watermark_ms`` elsewhere."""
    by_partition: dict[int, list[RoutedRange]] = {}
    for routed in live_routed:
        by_partition.setdefault(routed.partition, []).append(routed)
    rows = []
    for partition, (start, end) in sorted(ranges.items()):
        position = start
        for routed in sorted(by_partition.get(partition, ())):
            lo, hi = max(start, routed.start), min(end, routed.end)
            if lo >= hi or lo < position:
                continue
            if position < lo:
                rows.append((partition, position, lo, own_global_watermark_ms))
            rows.append((partition, lo, hi, routed.global_watermark_ms))
            position = hi
        if position < end:
            rows.append((partition, position, end, own_global_watermark_ms))
    return rows


def earliest_claim_routing(
    ranges: dict[int, tuple[int, int]], claims: Iterable[ClaimedRange]
) -> tuple[RoutedRange, ...]:
    """The G each offset of ``ranges`` is routed under: that of the earliest claim (lowest
    version) covering it, as routing ranges (tidemark.live_routing); NO_WATERMARK_MS for a claim
    without G. Offsets no claim covers get no range."""
    routed: list[RoutedRange] = []
    for partition, (start, end) in sorted(ranges.items()):
        free = [(start, end)]
        for claim in sorted(c for c in claims if c.partition == partition):
            still_free = []
            for lo, hi in free:
                a, b = max(lo, claim.start), min(hi, claim.end)
                if a >= b:
                    still_free.append((lo, hi))
                    continue
                g = NO_WATERMARK_MS if claim.global_watermark_ms is None else claim.global_watermark_ms
                routed.append(RoutedRange(partition, a, b, g))
                still_free.extend(part for part in ((lo, a), (b, hi)) if part[0] < part[1])
            free = still_free
    return tuple(sorted(routed))


def covered_parts(
    ranges: dict[int, tuple[int, int]], covering: Iterable[tuple[int, int, int]]
) -> dict[int, list[tuple[int, int]]]:
    """The parts of ``ranges`` ({partition: (start, end)}) that ``covering`` ((partition, start,
    end) triples, may overlap) covers, merged, per partition; partitions with none are left out."""
    parts: dict[int, list[tuple[int, int]]] = {}
    for partition, start, end in covering:
        bound = ranges.get(partition)
        if bound is None:
            continue
        lo, hi = max(bound[0], start), min(bound[1], end)
        if lo < hi:
            parts.setdefault(partition, []).append((lo, hi))
    return {partition: _merged(spans) for partition, spans in sorted(parts.items())}


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
