"""Stall of the live reading, per partition (not per hour): tidemark.stall_rules over the last
quality.stall_window live ledger rows, ordered by read time, with the log's readable end now.

Facts, one row per partition: the verdict's status and reason, the read position and the log
end. Rules: the status is OK or WARN (STOP, STALL and LAGGING fail the check), and, as a
warning only, the status is OK (WARN: the lag grew across the whole window).
"""

from __future__ import annotations

from dataclasses import dataclass

from expectations.check_family import CheckFamily, FamilyOutcome, Finding, rule, unexpected_rows
from expectations.ledger_entries import LedgerEntry
from expectations.quality_status import QualityStatus
from tidemark.stall_rules import StallRules, StallStatus, StallVerdict, partition_stall_status

NAME = "stall"


@dataclass(frozen=True)
class StallFacts:
    partition: int
    verdict: StallVerdict
    position: int | None
    log_end: int | None

    def row(self, row_id: int) -> tuple:
        return (
            row_id,
            self.partition,
            self.verdict.status.value,
            self.verdict.observations,
            self.position,
            self.log_end,
        )


def family() -> CheckFamily:
    import great_expectations.expectations as gxe

    return CheckFamily(
        name=NAME,
        columns=(
            ("row_id", "INT"),
            ("source_partition", "INT"),
            ("status", "STRING"),
            ("observations", "INT"),
            ("position", "BIGINT"),
            ("log_end", "BIGINT"),
        ),
        index_columns=("row_id", "source_partition", "status"),
        expectations=(
            rule(
                gxe.ExpectColumnValuesToBeInSet,
                "reading_progresses",
                "No partition is STOP (position frozen while the log grows), STALL (position constant with "
                "records unread) or LAGGING (W_p too far behind G).",
                column="status",
                value_set=[StallStatus.OK.value, StallStatus.WARN.value],
            ),
            rule(
                gxe.ExpectColumnValuesToBeInSet,
                "lag_not_growing",
                "No partition's lag grew across the whole stall window (warning).",
                column="status",
                value_set=[StallStatus.OK.value],
                severity="warning",
            ),
        ),
    )


def facts(
    entries: list[LedgerEntry],
    partitions: list[int],
    rules: StallRules,
    now_ms: int,
    log_ends: dict[int, int],
    positions: dict[int, int | None],
) -> list[StallFacts]:
    rows = []
    for partition in partitions:
        observations = [e.observation() for e in entries if e.partition == partition and e.is_live]
        verdict = partition_stall_status(observations, rules, now_ms, log_ends.get(partition))
        rows.append(StallFacts(partition, verdict, positions.get(partition), log_ends.get(partition)))
    return rows


def findings(outcome: FamilyOutcome, rows: list[StallFacts]) -> list[Finding]:
    found = []
    for fact in unexpected_rows(outcome, "reading_progresses", rows):
        status = QualityStatus(fact.verdict.status.value)
        found.append(
            Finding(
                fact.partition,
                NAME,
                status,
                f"{status.value}: {fact.verdict.reason}",
                job_silent=fact.verdict.job_silent,
            )
        )
    for fact in unexpected_rows(outcome, "lag_not_growing", rows):
        if fact.verdict.status is StallStatus.WARN:
            found.append(
                Finding(fact.partition, NAME, QualityStatus.WARN, f"WARN: {fact.verdict.reason}", failed=False)
            )
    return found
