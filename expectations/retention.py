"""Lost records, per partition and stream-wide: nothing the lake lacks may have left the log.

Facts, one row per partition with a live position and known log bounds:

- ``position``: where the live job reads next (the furthest end of its live ledger rows);
- ``earliest_retained``: the log's earliest retained offset now;
- ``missing_below_earliest``: offsets the completeness facts found missing (hole ranges, unread
  offsets) that lie below the earliest retained offset.

Rules: ``position >= earliest_retained`` (otherwise [position, earliest) was never read and is
gone: LOST) and ``missing_below_earliest == 0`` (a hole that can no longer be replayed: LOST).
Runs on every quality run, also when no hour is checked.

A range a person accepted as lost (tidemark.accepted_loss: ``tidemark accept-lost``) that starts
at the live position counts as passed: the rule judges the position after it, so the accepted
range no longer fails the check, and anything retention took beyond it still does (LOST).

A Kinesis stream has no "earliest retained offset" to compare with: the log says which sequence
range at the live position expired unread (connectors.kinesis_log.KinesisLog.lost_at_positions:
[position, first retained), or to the shard's end when nothing is retained), and how many
records it held is unknowable (sequence numbers are sparse). Its facts (``kinesis_facts``) carry
that range and the shard id; the rules are the same two, over 0/1 and a count of ranges.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from expectations.check_family import CheckFamily, FamilyOutcome, Finding, rule, unexpected_rows
from expectations.offset_spans import offsets_in, spans_text
from expectations.quality_status import QualityStatus
from tidemark.accepted_loss import AcceptedLoss, passed_accepted
from tidemark.log_position import KAFKA_OFFSETS, PositionType
from tidemark.offset_coverage import OffsetRange
from tidemark.recovery_request import split_by_retention
from tidemark.retention_loss import LostRange

NAME = "retention"


@dataclass(frozen=True)
class RetentionFacts:
    partition: int
    position: int
    earliest: int
    lost_holes: tuple[OffsetRange, ...]
    positions: PositionType = KAFKA_OFFSETS
    shard_id: str | None = None  # Kinesis: the shard
    lost_unread: object | None = None  # Kinesis: the LostRange expired at the position, or None
    # Ranges a person accepted as lost (tidemark.accepted_loss) that ``position`` has been moved
    # past: the live position, or where the live job reads on once it passes them.
    accepted: tuple = ()

    @property
    def never_read(self) -> tuple[OffsetRange, ...]:
        if not self.positions.dense and self.lost_unread is None:
            return ()
        return (OffsetRange(self.position, self.earliest),) if self.earliest > self.position else ()

    def row(self, row_id: int) -> tuple:
        if self.positions.dense:
            return (row_id, self.partition, self.position, self.earliest, offsets_in(self.lost_holes))
        lost = self.lost_unread
        return (
            row_id,
            self.partition,
            self.shard_id,
            str(self.position),
            None if lost is None or lost.end is None else str(lost.end),
            0 if lost is None else 1,
            len(self.lost_holes),
        )


def family(positions: PositionType = KAFKA_OFFSETS) -> CheckFamily:
    import great_expectations.expectations as gxe

    if not positions.dense:
        return _sequence_family()
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


def _sequence_family() -> CheckFamily:
    import great_expectations.expectations as gxe

    return CheckFamily(
        name=NAME,
        columns=(
            ("row_id", "INT"),
            ("source_partition", "INT"),
            ("shard_id", "STRING"),
            ("position", "STRING"),
            ("first_retained", "STRING"),
            ("expired_unread", "INT"),
            ("lost_hole_ranges", "INT"),
        ),
        index_columns=("row_id", "source_partition", "shard_id"),
        expectations=(
            rule(
                gxe.ExpectColumnValuesToBeBetween,
                "position_still_retained",
                "No sequence range at the shard's live read position expired before it was read "
                "(the stream's RetentionPeriodHours).",
                column="expired_unread",
                min_value=0,
                max_value=0,
            ),
            rule(
                gxe.ExpectColumnValuesToBeBetween,
                "no_hole_below_earliest",
                "No sequence range missing from the lake lies below the shard's first retained record.",
                column="lost_hole_ranges",
                min_value=0,
                max_value=0,
            ),
        ),
    )


def kinesis_facts(
    positions: dict[int, int | None],
    bounds: dict,
    holes: dict[int, list[OffsetRange]],
    sequence_type: PositionType,
    accepted: Sequence[AcceptedLoss] = (),
) -> list[RetentionFacts]:
    """Shards with a live position and bounds (connectors.kinesis_lookups.ShardLogBounds), in order;
    a finished shard (closed, read to its end) can lose nothing unread. A range ``accepted`` as
    lost from the live position on is not expired unread; what expired beyond it is."""
    rows = []
    for partition in sorted(positions):
        position, shard = positions[partition], bounds.get(partition)
        if position is None or shard is None or (shard.finished and shard.lost is None):
            continue
        _, lost = split_by_retention(holes.get(partition, []), shard.earliest)
        mine = tuple(a for a in accepted if a.partition == partition)
        passed = passed_accepted(position, mine)
        expired = shard.lost
        if expired is not None and expired.end is not None and passed >= expired.end:
            expired = None  # accepted as lost, to its last position: not a loss to alarm about again
        elif expired is not None and passed > position:
            expired = LostRange(expired.partition, passed, expired.end)  # beyond what was accepted: a loss of its own
        rows.append(
            RetentionFacts(partition, passed, shard.earliest, tuple(lost), sequence_type, shard.shard_id, expired, mine)
        )
    return rows


def facts(
    positions: dict[int, int | None],
    earliest: dict[int, int],
    holes: dict[int, list[OffsetRange]],
    accepted: Sequence[AcceptedLoss] = (),
) -> list[RetentionFacts]:
    """Partitions with both a live position and a known earliest offset, in order. A range
    ``accepted`` as lost that starts at the live position is judged passed (the live job reads on
    after it): only what retention took beyond it is LOST."""
    rows = []
    for partition in sorted(positions):
        position = positions[partition]
        if position is None or partition not in earliest:
            continue
        _, lost = split_by_retention(holes.get(partition, []), earliest[partition])
        mine = tuple(a for a in accepted if a.partition == partition)
        rows.append(
            RetentionFacts(partition, passed_accepted(position, mine), earliest[partition], tuple(lost), accepted=mine)
        )
    return rows


def findings(outcome: FamilyOutcome, rows: list[RetentionFacts]) -> list[Finding]:
    found = []
    for fact in unexpected_rows(outcome, "position_still_retained", rows):
        if not fact.positions.dense:
            found.append(_expired_unread(fact))
            continue
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
        if not fact.positions.dense:
            found.append(
                Finding(
                    fact.partition,
                    NAME,
                    QualityStatus.LOST,
                    f"sequence numbers {spans_text(fact.lost_holes)} of shard {fact.shard_id} are missing from the "
                    f"lake and below its first retained record (sequence number {fact.earliest}): they can no longer "
                    "be recovered",
                    lost=fact.lost_holes,
                )
            )
            continue
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


def _expired_unread(fact: RetentionFacts) -> Finding:
    lost = fact.lost_unread
    end = "the shard's end (it retains no record after the position)" if lost.end is None else str(lost.end)
    return Finding(
        fact.partition,
        NAME,
        QualityStatus.LOST,
        f"sequence numbers [{fact.position}, {end}) of shard {fact.shard_id} expired before they were read "
        f"(the stream's RetentionPeriodHours; read position {fact.position}): how many records they held is "
        "unknown (sequence numbers are sparse; possibly none)",
        lost=fact.never_read,
    )
