"""Decoding of the live reading, per partition (not per hour): a partition whose newest live
ledger rows read records and not one of them could be decoded.

Such a partition sends every record to quarantine (each with its reason, nothing lost), so no
event time reaches the lake: its watermark stands, no hour of it is ever sealed, and the
per-hour quarantine limit (expectations.late_and_quarantine) never sees it, since it counts the
quarantine within the ranges that carried an hour's records. A topic whose producer writes
another format, or a contract broken at the source, looks exactly like this, and would otherwise
pass every check.

Facts, one row per partition with live rows that read records among its newest
``quality.stall_window``: how many such rows, their records, and how many of those rows held
one decodable record (a row with records and no event time held none: a decoded record, even a
late one, has one). Rule: a partition whose rows read more than ``quality.max_quarantined_per_hour``
records has at least one row with a decodable record. A failure is STALL for the partition (its
event time does not advance), alarmed as one; no recovery is asked (replaying undecodable records
decodes nothing): the contract is fixed, then the quarantine re-driven.
"""

from __future__ import annotations

from dataclasses import dataclass

from expectations.check_family import CheckFamily, FamilyOutcome, Finding, rule, unexpected_rows
from expectations.ledger_entries import LedgerEntry
from expectations.quality_status import QualityStatus
from tidemark.stream_config import QualitySettings

NAME = "decoding"


@dataclass(frozen=True)
class DecodingFacts:
    """``rows``: the partition's newest live ledger rows (of the stall window) that read records;
    ``records``: theirs; ``decodable_rows``: those of them that held a decodable record."""

    partition: int
    rows: int
    records: int
    decodable_rows: int

    def row(self, row_id: int) -> tuple:
        return (row_id, self.partition, self.rows, self.records, self.decodable_rows)


def family(settings: QualitySettings) -> CheckFamily:
    import great_expectations.expectations as gxe
    from great_expectations.expectations.row_conditions import Column

    return CheckFamily(
        name=NAME,
        columns=(
            ("row_id", "INT"),
            ("source_partition", "INT"),
            ("rows", "BIGINT"),
            ("records", "BIGINT"),
            ("decodable_rows", "BIGINT"),
        ),
        index_columns=("row_id", "source_partition"),
        expectations=(
            rule(
                gxe.ExpectColumnValuesToBeBetween,
                "records_decodable",
                f"A partition whose newest live batches read more than {settings.max_quarantined_per_hour} "
                "records decoded at least one of them.",
                column="decodable_rows",
                min_value=1,
                row_condition=Column("records") > settings.max_quarantined_per_hour,
            ),
        ),
    )


def facts(entries: list[LedgerEntry], partitions: list[int], window: int) -> list[DecodingFacts]:
    """One row per partition of ``partitions`` with live rows that read records among its newest
    ``window`` live rows (``entries`` hold at least those: expectations.ledger_selection)."""
    rows = []
    for partition in partitions:
        live = [entry for entry in entries if entry.partition == partition and entry.is_live]
        newest = sorted(live, key=lambda entry: (entry.read_time_ms or 0, entry.step_id))[-window:]
        with_records = [entry for entry in newest if entry.data_records > 0]
        if with_records:
            rows.append(
                DecodingFacts(
                    partition,
                    len(with_records),
                    sum(entry.data_records for entry in with_records),
                    sum(entry.min_event_ms is not None for entry in with_records),
                )
            )
    return rows


def findings(outcome: FamilyOutcome, rows: list[DecodingFacts]) -> list[Finding]:
    return [
        Finding(
            fact.partition,
            NAME,
            QualityStatus.STALL,
            f"STALL: its newest {fact.rows} live batches read {fact.records:,} records and not one could be decoded "
            "(all in quarantine, each with its reason): its event time does not advance",
        )
        for fact in unexpected_rows(outcome, "records_decodable", rows)
    ]
