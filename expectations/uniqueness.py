"""Uniqueness of (source_partition, source_offset) across events, late and quarantine, per hour
and partition, over the offsets of the ranges that carried the hour's records.

Each record of the log is persisted exactly once, in exactly one of the three tables: the key
of exactly-once. Facts, one row per (hour, partition): rows in the hour's offsets, the distinct
offsets among them, how many offsets have more than one row (and the first few of them).
Rule: rows == distinct offsets. A duplicate is WARN for the partition (nothing is missing) and
fails the check.
"""

from __future__ import annotations

from dataclasses import dataclass

from expectations.check_family import CheckFamily, FamilyOutcome, Finding, rule, unexpected_rows
from expectations.hour_scope import HourScope, hour_text
from expectations.persisted_offsets import ScopeCount
from expectations.quality_status import QualityStatus

NAME = "uniqueness"


@dataclass(frozen=True)
class UniquenessFacts:
    hour_ms: int
    partition: int
    count: ScopeCount

    def row(self, row_id: int) -> tuple:
        c = self.count
        return (row_id, hour_text(self.hour_ms), self.partition, c.rows, c.distinct_offsets, c.duplicated_offsets)


def family() -> CheckFamily:
    import great_expectations.expectations as gxe

    return CheckFamily(
        name=NAME,
        columns=(
            ("row_id", "INT"),
            ("hour", "STRING"),
            ("source_partition", "INT"),
            ("persisted_rows", "BIGINT"),
            ("distinct_offsets", "BIGINT"),
            ("duplicated_offsets", "BIGINT"),
        ),
        index_columns=("row_id", "hour", "source_partition"),
        expectations=(
            rule(
                gxe.ExpectColumnPairValuesToBeEqual,
                "one_row_per_offset",
                "Each (source_partition, source_offset) of the hour's ranges has one row in events, late "
                "and quarantine together.",
                column_A="persisted_rows",
                column_B="distinct_offsets",
            ),
        ),
    )


def facts(
    partitions: list[int], scopes: list[HourScope], counts: dict[tuple[int, int], ScopeCount]
) -> list[UniquenessFacts]:
    empty = ScopeCount(0, 0, 0, (), 0)
    return [
        UniquenessFacts(scope.hour_ms, partition, counts.get((scope.hour_ms, partition), empty))
        for scope in scopes
        for partition in partitions
    ]


def findings(outcome: FamilyOutcome, rows: list[UniquenessFacts]) -> list[Finding]:
    found = []
    for fact in unexpected_rows(outcome, "one_row_per_offset", rows):
        c = fact.count
        sample = ", ".join(str(offset) for offset in c.duplicated_sample)
        more = "" if c.duplicated_offsets <= len(c.duplicated_sample) else ", ..."
        found.append(
            Finding(
                fact.partition,
                NAME,
                QualityStatus.WARN,
                f"hour {hour_text(fact.hour_ms)}: {c.duplicated_offsets} offsets persisted more than once "
                f"({c.rows} rows for {c.distinct_offsets} offsets), e.g. offsets {sample}{more}",
                hour_ms=fact.hour_ms,
            )
        )
    return found
