"""Lost records, per partition and stream-wide: nothing the lake lacks may have left the log.

Facts, one row per partition with a live position and known log bounds:

- ``position``: where the live job reads next (the furthest end of its live ledger rows);
- ``earliest_retained``: the log's earliest retained offset now;
- ``missing_below_earliest``: offsets the completeness facts found missing (hole ranges, unread
  offsets) that lie below the earliest retained offset.

Rules: ``position >= earliest_retained`` (otherwise [position, earliest) was never read and is
gone: LOST) and ``missing_below_earliest == 0`` (a hole that can no longer be replayed: LOST).
Runs on every quality run, also when no hour is checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from expectations.check_family import CheckFamily, FamilyOutcome, Finding, rule, unexpected_rows
from expectations.offset_spans import offsets_in, spans_text
from expectations.quality_status import QualityStatus
from tidemark.offset_coverage import OffsetRange
from tidemark.recovery_request import split_by_retention

NAME = "retention"


@dataclass(frozen=True)
class RetentionFacts:
    partition: int
    position: int
    earliest: int
    lost_holes: tuple[OffsetRange, ...]

    @property
    def never_read(self) -> tuple[OffsetRange, ...]:
        return (OffsetRange(self.position, self.earliest),) if self.earliest > self.position else ()

    def row(self, row_id: int) -> tuple:
        return (row_id, self.partition, self.position, self.earliest, offsets_in(self.lost_holes))


def family() -> CheckFamily:
    import great_expectations.expectations as gxe

    return CheckFamily(
        name=NAME,
        columns=(
            ("row_id", "INT"),
            ("source_partition", "INT"),
            ("position", "BIGINT"),
            ("earliest_retained", "BIGINT"),
            ("missing_below_earliest", "BIGINT"),
        ),
        index_columns=("row_id", "source_partition"),
        expectations=(
            rule(
                gxe.ExpectColumnPairValuesAToBeGreaterThanB,
                "position_still_retained",
                "The live read position is at or after the log's earliest retained offset: "
                "nothing between them fell out of retention unread.",
                column_A="position",
                column_B="earliest_retained",
                or_equal=True,
            ),
            rule(
                gxe.ExpectColumnValuesToBeBetween,
                "no_hole_below_earliest",
                "No offset missing from the lake lies below the log's earliest retained offset.",
                column="missing_below_earliest",
                min_value=0,
                max_value=0,
            ),
        ),
    )


def facts(
    positions: dict[int, int | None], earliest: dict[int, int], holes: dict[int, list[OffsetRange]]
) -> list[RetentionFacts]:
    """Partitions with both a live position and a known earliest offset, in order."""
    rows = []
    for partition in sorted(positions):
        position = positions[partition]
        if position is None or partition not in earliest:
            continue
        _, lost = split_by_retention(holes.get(partition, []), earliest[partition])
        rows.append(RetentionFacts(partition, position, earliest[partition], tuple(lost)))
    return rows


def findings(outcome: FamilyOutcome, rows: list[RetentionFacts]) -> list[Finding]:
    found = []
    for fact in unexpected_rows(outcome, "position_still_retained", rows):
        found.append(
            Finding(
                fact.partition,
                NAME,
                QualityStatus.LOST,
                f"offsets [{fact.position}, {fact.earliest}) were never read and are no longer in the log "
                f"(read position {fact.position}, earliest retained offset {fact.earliest}): "
                f"{fact.earliest - fact.position} offsets lost",
                lost=fact.never_read,
            )
        )
    for fact in unexpected_rows(outcome, "no_hole_below_earliest", rows):
        found.append(
            Finding(
                fact.partition,
                NAME,
                QualityStatus.LOST,
                f"offsets {spans_text(fact.lost_holes)} are missing from the lake and below the earliest retained "
                f"offset {fact.earliest}: they can no longer be recovered",
                lost=fact.lost_holes,
            )
        )
    return found
