"""A check family: one GX suite over one small fact frame, and what its failures mean.

The lake's facts are computed first (expectations.lake_facts: without Spark for a regular run,
with Spark for the sweep; one row per range, per hour and partition, or per partition, each
with a ``row_id``); Great Expectations judges them, as a pandas frame. A family's findings are read from GX's
unexpected rows only, so a status in the report is always one GX reported. Each expectation
carries its rule name in ``meta["tidemark_rule"]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from expectations.quality_status import QualityStatus
from tidemark.offset_coverage import OffsetRange

RULE_KEY = "tidemark_rule"


@dataclass(frozen=True)
class CheckFamily:
    """``columns`` are the fact frame's (name, Spark SQL type), ``row_id`` INT first;
    ``index_columns`` name a failing row in Data Docs and in the result (row_id first)."""

    name: str
    columns: tuple[tuple[str, str], ...]
    index_columns: tuple[str, ...]
    expectations: tuple[Any, ...]  # great_expectations.expectations.Expectation instances

    def __post_init__(self) -> None:
        if self.columns[0] != ("row_id", "INT") or self.index_columns[0] != "row_id":
            raise ValueError(f"check family {self.name}: row_id INT must be the first column and index column")
        for expectation in self.expectations:
            if not (expectation.meta or {}).get(RULE_KEY):
                raise ValueError(f"check family {self.name}: every expectation needs meta[{RULE_KEY!r}]")

    def ddl(self) -> str:
        return ", ".join(f"{name} {sql_type}" for name, sql_type in self.columns)


def rule(expectation_class, name: str, description: str, **kwargs):
    """An expectation tagged with its rule name, described for Data Docs."""
    return expectation_class(meta={RULE_KEY: name}, description=description, **kwargs)


@dataclass(frozen=True)
class RuleResult:
    rule: str
    severity: str  # critical | warning
    success: bool
    unexpected_row_ids: tuple[int, ...]


@dataclass(frozen=True)
class FamilyOutcome:
    """What GX said about one family's fact frame."""

    family: str
    rows: int
    rules: tuple[RuleResult, ...]
    seconds: float

    @property
    def success(self) -> bool:
        """No critical rule failed (warnings do not fail a check)."""
        return all(r.success for r in self.rules if r.severity == "critical")

    @property
    def failed_rules(self) -> list[str]:
        return [r.rule for r in self.rules if not r.success and r.severity == "critical"]

    @property
    def warned_rules(self) -> list[str]:
        return [r.rule for r in self.rules if not r.success and r.severity != "critical"]

    def unexpected(self, rule_name: str) -> tuple[int, ...]:
        for result in self.rules:
            if result.rule == rule_name:
                return result.unexpected_row_ids
        raise KeyError(f"check family {self.family} has no rule {rule_name!r}")


@dataclass(frozen=True)
class Finding:
    """One thing a check found about one partition (in one hour, or stream-wide when
    ``hour_ms`` is None): the status it implies and a sentence for a person."""

    partition: int
    check: str
    status: QualityStatus
    reason: str
    hour_ms: int | None = None
    holes: tuple[OffsetRange, ...] = field(default=())  # offsets missing from the lake
    hole_range: Any = None  # the deficient ledger range, when there is one (a HoleRange)
    lost: tuple[OffsetRange, ...] = field(default=())  # offsets missing and gone from the log
    failed: bool = True  # False for a warning-only finding
    # A stall of the whole job (no ledger row at all): restart the job, do not replay ranges.
    job_silent: bool = False


def not_run(family: str) -> FamilyOutcome:
    """The outcome of a family with no rows to check (e.g. no hours asked)."""
    return FamilyOutcome(family, 0, (), 0.0)


def unexpected_rows(outcome: FamilyOutcome, rule_name: str, facts: Sequence) -> list:
    """The fact rows GX found unexpected for ``rule_name``, in row order."""
    return [facts[row_id] for row_id in sorted(set(outcome.unexpected(rule_name)))] if outcome.rules else []
