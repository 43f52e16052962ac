"""What a family's quality tick asks of its runner (expectations/family_quality_run.py), and what
the runner says back: one typed value each way across the process boundary."""

from __future__ import annotations

from tidemark.result_value import ResultValue


class MemberCheck(ResultValue, frozen=True):
    """Check ``stream``: its ``hours`` (ISO-8601 UTC hour starts) plus every sealed hour without a
    report yet, and its stall and retention."""

    stream: str
    hours: tuple[str, ...] = ()


class FamilyQualityRequest(ResultValue, frozen=True):
    """The members one runner checks, one after another, in one process (Great Expectations
    imported once, and for a sweep one Spark session), each as expectations/quality_run.py checks
    a stream."""

    run_name: str
    members: tuple[MemberCheck, ...]
    # A sweep (quality_run.py --sweep): completeness of every hour the log retains, read with
    # Spark, one session for all the members; no hours given.
    sweep: bool = False


class MemberCheckOutcome(ResultValue, frozen=True):
    """One member's check: ``exit_code`` as quality_run.py's (0 checked, 2 refused: a missing table,
    a topic that does not exist; 1 another failure), ``error`` its last line when it was not 0,
    ``result_file`` its summary's file name in the result folder when it was."""

    stream: str
    exit_code: int
    seconds: float
    error: str | None = None
    result_file: str | None = None


class FamilyQualityResult(ResultValue, frozen=True):
    members: tuple[MemberCheckOutcome, ...]
    seconds: float
