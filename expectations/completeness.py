"""Completeness of an hour, per partition: every ledger range that carried the hour's records has
all of them in the lake, and the live ranges leave no offset unread.

Facts, one row per (hour, ledger range that carried records of the hour):

- ``persisted``: distinct offsets of the range with a row in events, late or quarantine;
- ``data_records``: the data records the ledger says the range held (offsets are not records:
  a transactional range [s, e) holds fewer than e − s);
- ``unread_next_to``: offsets right before or after a live range that no live range read and no
  backfill or recovery range covered since (tidemark.offset_coverage.range_breaks).

Rules: ``persisted == data_records`` (fewer is a *hole range*: HOLE, with the exact offsets no
row holds; more means the ledger undercounts: WARN), and ``unread_next_to == 0`` (HOLE).

A Kinesis stream's positions are sparse sequence numbers (tidemark.log_position): the counts
compared are the same (the ledger's data records against distinct persisted rows), never a
difference of positions; a deficient range is named whole, as a sequence range (which of its
sequence numbers held the missing records only the log knows), ``unread_next_to`` counts
unread sequence ranges rather than positions, and the position columns are decimal text.
"""

from __future__ import annotations

from dataclasses import dataclass

from expectations.check_family import CheckFamily, FamilyOutcome, Finding, rule, unexpected_rows
from expectations.hour_scope import HourScope, hour_text
from expectations.ledger_entries import LedgerEntry
from expectations.offset_spans import offsets_in, spans_json, spans_text
from expectations.persisted_offsets import PersistedOffsets
from expectations.quality_status import QualityStatus
from tidemark.log_position import KAFKA_OFFSETS, PositionType
from tidemark.offset_coverage import OffsetRange, merge_ranges, range_breaks, uncovered_ranges
from tidemark.shard_lineage import shard_id_of

NAME = "completeness"


@dataclass(frozen=True)
class HoleRange:
    """A ledger range with fewer persisted rows than data records, and the offsets no row holds
    (these include the range's offsets without data, if it had any: only the log knows which)."""

    partition: int
    start: int
    end: int
    mode: str
    step_id: int
    data_records: int
    persisted: int
    missing: tuple[OffsetRange, ...]

    def to_json(self) -> dict:
        return {
            "start": self.start,
            "end": self.end,
            "mode": self.mode,
            "step_id": self.step_id,
            "data_records": self.data_records,
            "persisted": self.persisted,
            "missing": spans_json(self.missing),
        }


@dataclass(frozen=True)
class RangeFacts:
    hour_ms: int
    entry: LedgerEntry
    persisted: int
    unread: tuple[OffsetRange, ...]  # unread offsets next to the range (live ranges only)
    missing: tuple[OffsetRange, ...]  # offsets of the range no row holds (only when persisted < data_records)
    positions: PositionType = KAFKA_OFFSETS

    def row(self, row_id: int) -> tuple:
        e = self.entry
        dense = self.positions.dense
        return (
            row_id,
            hour_text(self.hour_ms),
            e.partition,
            e.mode,
            e.step_id,
            e.start if dense else str(e.start),
            e.end if dense else str(e.end),
            e.data_records,
            self.persisted,
            offsets_in(self.unread) if dense else len(self.unread),
        )


def family(positions: PositionType = KAFKA_OFFSETS) -> CheckFamily:
    """The family's columns carry the stream's positions: BIGINT offsets, or for sparse sequence
    numbers (up to 129 digits, no long holds them) decimal text."""
    import great_expectations.expectations as gxe

    position_sql = "BIGINT" if positions.dense else "STRING"

    return CheckFamily(
        name=NAME,
        columns=(
            ("row_id", "INT"),
            ("hour", "STRING"),
            ("source_partition", "INT"),
            ("mode", "STRING"),
            ("step_id", "BIGINT"),
            ("start_offset", position_sql),
            ("end_offset", position_sql),
            ("data_records", "BIGINT"),
            ("persisted", "BIGINT"),
            ("unread_next_to", "BIGINT"),
        ),
        index_columns=("row_id", "hour", "source_partition", "start_offset", "end_offset"),
        expectations=(
            rule(
                gxe.ExpectColumnPairValuesToBeEqual,
                "persisted_equals_data_records",
                "Every ledger range that carried records of the hour has as many distinct offsets "
                "persisted (events + late + quarantine) as the data records it held.",
                column_A="persisted",
                column_B="data_records",
            ),
            rule(
                gxe.ExpectColumnValuesToBeBetween,
                "live_ranges_contiguous",
                "Live ranges are contiguous: no offset next to a range was left unread by every "
                "live, backfill and recovery range.",
                column="unread_next_to",
                min_value=0,
                max_value=0,
            ),
        ),
    )


def facts(
    entries: list[LedgerEntry],
    scopes: list[HourScope],
    offsets: PersistedOffsets,
    positions: PositionType = KAFKA_OFFSETS,
) -> list[RangeFacts]:
    """One row per (hour, ledger range carrying records of the hour), hours in order."""
    unread = unread_next_to(entries)
    in_scope = {
        entry: (entry.partition, entry.offsets)
        for scope in scopes
        for ranges in scope.ranges.values()
        for entry in ranges
    }
    persisted = offsets.distinct_per_range(in_scope)
    deficient = {entry: span for entry, span in in_scope.items() if persisted[entry] < entry.data_records}
    missing = offsets.missing_spans(deficient)
    return [
        RangeFacts(
            scope.hour_ms,
            entry,
            persisted[entry],
            tuple(unread.get(entry, ())),
            tuple(missing.get(entry, ())),
            positions,
        )
        for scope in scopes
        for partition in sorted(scope.ranges)
        for entry in scope.ranges[partition]
    ]


def unread_next_to(entries: list[LedgerEntry]) -> dict[LedgerEntry, list[OffsetRange]]:
    """For each live entry: the offsets between it and its live neighbour that nobody read.

    A break between live ranges is a gap when no live range covers it (an overlap, offsets read
    twice, is covered); of a gap, what backfill or recovery ranges covered since is read too."""
    result: dict[LedgerEntry, list[OffsetRange]] = {}
    breaks = range_breaks([entry.ledger_range() for entry in entries])
    for partition, span in breaks:
        of_partition = [e for e in entries if e.partition == partition and e.offsets is not None]
        live = [e.offsets for e in of_partition if e.is_live]
        if uncovered_ranges(live, span.start, span.end) != [span]:
            continue  # an overlap: read twice, which the uniqueness check looks at
        unread = uncovered_ranges([e.offsets for e in of_partition], span.start, span.end)
        if not unread:
            continue
        for entry in of_partition:
            if entry.is_live and (entry.end == span.start or entry.start == span.end):
                result.setdefault(entry, []).extend(unread)
    return result


def candidate_holes(rows: list[RangeFacts]) -> dict[int, list[OffsetRange]]:
    """Per partition, the offsets the facts show missing (what the retention check splits)."""
    holes: dict[int, list[OffsetRange]] = {}
    for fact in rows:
        holes.setdefault(fact.entry.partition, []).extend(fact.missing + fact.unread)
    return {partition: merge_ranges(spans) for partition, spans in holes.items()}


def findings(outcome: FamilyOutcome, rows: list[RangeFacts]) -> list[Finding]:
    found = []
    for fact in unexpected_rows(outcome, "persisted_equals_data_records", rows):
        e = fact.entry
        dense = fact.positions.dense
        where = f"hour {hour_text(fact.hour_ms)}: {e.mode} range [{e.start}, {e.end}) of step {e.step_id}"
        if not dense:
            where = (
                f"hour {hour_text(fact.hour_ms)}: {e.mode} range of {fact.positions.name}s [{e.start}, {e.end}) "
                f"of shard {shard_id_of(e.partition)}, step {e.step_id},"
            )
        if fact.persisted < e.data_records:
            without_data = e.end - e.start - e.data_records if dense else 0
            note = (
                f" (the range also held {without_data} offsets without data, which are among these)"
                if without_data > 0
                else ""
            )
            hole = HoleRange(
                e.partition, e.start, e.end, e.mode, e.step_id, e.data_records, fact.persisted, fact.missing
            )
            where_missing = (
                f"offsets with no row: {spans_text(fact.missing)}{note}"
                if dense
                else f"they lie in {fact.positions.name}s {spans_text(fact.missing)} (which ones only the log can "
                "tell: sequence numbers are sparse, so recovery replays the whole range)"
            )
            found.append(
                Finding(
                    e.partition,
                    NAME,
                    QualityStatus.HOLE,
                    f"{where} held {e.data_records} data records but {fact.persisted} are persisted: "
                    f"{e.data_records - fact.persisted} missing; {where_missing}",
                    hour_ms=fact.hour_ms,
                    holes=fact.missing,
                    hole_range=hole,
                )
            )
        else:
            counted = "distinct offsets" if dense else f"distinct {fact.positions.name}s"
            found.append(
                Finding(
                    e.partition,
                    NAME,
                    QualityStatus.WARN,
                    f"{where}: the ledger counts {e.data_records} data records but {fact.persisted} {counted} "
                    f"are persisted in it: the ledger undercounts",
                    hour_ms=fact.hour_ms,
                )
            )
    for fact in unexpected_rows(outcome, "live_ranges_contiguous", rows):
        e = fact.entry
        word = f"{fact.positions.name}s"
        found.append(
            Finding(
                e.partition,
                NAME,
                QualityStatus.HOLE,
                f"hour {hour_text(fact.hour_ms)}: {word} {spans_text(fact.unread)} next to live range "
                f"[{e.start}, {e.end}) were never read (no live, backfill or recovery range covers them)",
                hour_ms=fact.hour_ms,
                holes=fact.unread,
            )
        )
    return found
