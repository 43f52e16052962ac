"""Late and quarantined records of an hour, per partition, within the stream's thresholds.

Facts, one row per (hour, partition): ``late``, the late rows whose event time is in
[H, H + 1h); ``quarantined``, the quarantine rows whose offsets lie in the ranges that carried
the hour's records (a quarantined record has no trustworthy event time: the ledger range it was
read in places it). Rules: late <= quality.max_late_per_hour and quarantined <=
quality.max_quarantined_per_hour, per partition and hour. Both are WARN for the partition (the
records are kept, not lost) and fail the check.
"""

from __future__ import annotations

from dataclasses import dataclass

from expectations.check_family import CheckFamily, FamilyOutcome, Finding, rule, unexpected_rows
from expectations.hour_scope import hour_text
from expectations.quality_status import QualityStatus
from tidemark.stream_config import QualitySettings

NAME = "late_and_quarantine"


@dataclass(frozen=True)
class LateAndQuarantineFacts:
    hour_ms: int
    partition: int
    late: int
    quarantined: int

    def row(self, row_id: int) -> tuple:
        return (row_id, hour_text(self.hour_ms), self.partition, self.late, self.quarantined)


def family(settings: QualitySettings) -> CheckFamily:
    import great_expectations.expectations as gxe

    return CheckFamily(
        name=NAME,
        columns=(
            ("row_id", "INT"),
            ("hour", "STRING"),
            ("source_partition", "INT"),
            ("late", "BIGINT"),
            ("quarantined", "BIGINT"),
        ),
        index_columns=("row_id", "hour", "source_partition"),
        expectations=(
            rule(
                gxe.ExpectColumnValuesToBeBetween,
                "late_within_limit",
                f"At most {settings.max_late_per_hour} late records per partition and hour.",
                column="late",
                min_value=0,
                max_value=settings.max_late_per_hour,
            ),
            rule(
                gxe.ExpectColumnValuesToBeBetween,
                "quarantined_within_limit",
                f"At most {settings.max_quarantined_per_hour} quarantined records per partition in the hour's ranges.",
                column="quarantined",
                min_value=0,
                max_value=settings.max_quarantined_per_hour,
            ),
        ),
    )


def findings(outcome: FamilyOutcome, rows: list[LateAndQuarantineFacts], settings: QualitySettings) -> list[Finding]:
    found = []
    for fact in unexpected_rows(outcome, "late_within_limit", rows):
        found.append(
            Finding(
                fact.partition,
                NAME,
                QualityStatus.WARN,
                f"hour {hour_text(fact.hour_ms)}: {fact.late} late records (limit {settings.max_late_per_hour})",
                hour_ms=fact.hour_ms,
            )
        )
    for fact in unexpected_rows(outcome, "quarantined_within_limit", rows):
        found.append(
            Finding(
                fact.partition,
                NAME,
                QualityStatus.WARN,
                f"hour {hour_text(fact.hour_ms)}: {fact.quarantined} quarantined records "
                f"(limit {settings.max_quarantined_per_hour})",
                hour_ms=fact.hour_ms,
            )
        )
    return found
