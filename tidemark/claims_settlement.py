"""Finished claims, folded into the routing they fixed: how the claims table stays small.

A claim (tidemark.write_claims) does two things. While its writer runs, it tells the live job to
leave its offsets alone. For good, it fixes the G its offsets are routed under (the earliest
claim's), so that whoever writes them again routes them into the same table. When its writer
finishes, the first is over and the second is not: the offsets are written, live must still
leave them alone, and a later backfill or recovery of them must route them as they were.

So a finished claim is *released* (its writer appends a row saying so, after its last commit),
and the maintenance job *settles* the released claims: one commit replaces them by **settled
ranges**, (partition, start, end, G) of the routing they fixed, adjacent ranges of one G
merged, ranked before every claim (``SETTLED_VERSION``). Nothing any writer decides changes:

- live leaves a settled offset out of its batches as it left out the claimed one;
- a later claimer routes a settled offset under the settled G, which is the G the earliest claim
  covering it gave it (its own, or an older one's, still kept): the routing every writer of it
  used.

A claim whose writer died (it yielded, failed, or was killed) is never released. It is settled
once released claims cover every one of its offsets: they wrote them all, each routed under the
earliest claim's G. Until then it stays, and live leaves its offsets alone, as before
(the hole is the quality run's to find and recovery's to fill, which then settles it).

Re-drive claims are kept as they are: a re-drive routes under the earliest *re-drive* claim
only (spark_jobs/replay/redrive.py), a rule settled ranges of every mode cannot answer. They are
few: a re-drive is a person's decision, not a schedule's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tidemark.live_routing import RoutedRange
from tidemark.write_claims import NO_WATERMARK_MS, ClaimedRange, earliest_claim_routing

SETTLED = "settled"  # the mode (and claim id) of a settled range
RELEASED = "released"  # the mode of the row that releases a claim
KEPT_MODES = ("redrive",)  # never settled (see above)
# The version a settled range ranks at: before every claim, also those whose commit the log no
# longer holds (ranked below zero by claim time, see spark_jobs.lake.claims_table).
SETTLED_VERSION = -(2**62)


def claim_id(writer: str) -> str:
    """The claim id of a claim's writer, tidemark:<stream>:<mode>:<claim id>."""
    return writer.rsplit(":", 1)[1]


def writer_mode(writer: str) -> str:
    """The mode of a claim's writer, tidemark:<stream>:<mode>:<claim id>."""
    return writer.rsplit(":", 2)[1]


@dataclass(frozen=True)
class Settlement:
    """What settling a claims table decides.

    ``folded``: the claim ids whose rows go (released claims, dead ones whose offsets released
    ones cover, and the settled ranges of the last settlement, replaced by ``settled``); ``settled``:
    every settled range after, merged; ``kept``: the claims that stay, each with its version."""

    folded: frozenset[str]
    settled: tuple[RoutedRange, ...]
    kept: tuple[ClaimedRange, ...]

    @property
    def changes(self) -> bool:
        """Whether settling changes the table: a claim to fold (settled ranges alone are already
        as they would be written again)."""
        return bool(self.folded - {SETTLED})


def settle(claims: Iterable[ClaimedRange], released: set[str]) -> Settlement:
    """Settle ``claims`` (every row of the table: claims and settled ranges, with their
    versions), of which the claim ids in ``released`` were released."""
    claims = sorted(claims)
    by_id: dict[str, list[ClaimedRange]] = {}
    for claim in claims:
        by_id.setdefault(claim_id(claim.writer), []).append(claim)
    modes = {identity: writer_mode(rows[0].writer) for identity, rows in by_id.items()}
    finished = {
        identity
        for identity, mode in modes.items()
        if mode == SETTLED or (identity in released and mode not in KEPT_MODES)
    }
    covered: dict[int, list[tuple[int, int]]] = {}  # offsets written by a finished writer
    for identity in finished:
        for c in by_id[identity]:
            covered.setdefault(c.partition, []).append((c.start, c.end))
    # A claim whose writer did not finish is settled when finished writers wrote all of its offsets.
    folded = finished | {
        identity
        for identity, rows in by_id.items()
        if modes[identity] not in KEPT_MODES
        and all(_within((c.start, c.end), covered.get(c.partition, [])) for c in rows)
    }
    settled = _merged(
        routed
        for identity in folded
        for c in by_id[identity]
        for routed in earliest_claim_routing({c.partition: (c.start, c.end)}, claims)
    )
    kept = tuple(c for identity, rows in by_id.items() if identity not in folded for c in rows)
    return Settlement(frozenset(folded), settled, tuple(sorted(kept)))


def settled_claims(settled: Iterable[RoutedRange], stream_name: str) -> list[ClaimedRange]:
    """Settled ranges as the claims they rank as (``SETTLED_VERSION``; NO_WATERMARK_MS as no G)."""
    writer = f"tidemark:{stream_name}:{SETTLED}:{SETTLED}"
    return [
        ClaimedRange(
            SETTLED_VERSION,
            r.partition,
            r.start,
            r.end,
            None if r.global_watermark_ms == NO_WATERMARK_MS else r.global_watermark_ms,
            writer,
        )
        for r in settled
    ]


def _within(span: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
    """Whether ``spans`` (may overlap, any order) cover every offset of ``span``."""
    position = span[0]
    for start, end in sorted(spans):
        if start > position:
            break
        position = max(position, end)
        if position >= span[1]:
            return True
    return position >= span[1]


def _merged(ranges: Iterable[RoutedRange]) -> tuple[RoutedRange, ...]:
    """``ranges`` as disjoint ranges, overlapping and adjacent ones of one G joined. They may
    overlap (two folded claims of one offset) but never disagree: each is the earliest claim's
    routing over the same claims, one G per offset."""
    merged: list[RoutedRange] = []
    for r in sorted(set(ranges)):
        last = merged[-1] if merged else None
        if (
            last
            and (last.partition, last.global_watermark_ms) == (r.partition, r.global_watermark_ms)
            and r.start <= last.end
        ):
            merged[-1] = RoutedRange(r.partition, last.start, max(last.end, r.end), r.global_watermark_ms)
        else:
            merged.append(r)
    return tuple(merged)
