"""What one driver of a family's tick did (spark_jobs/persist/family_job.py,
spark_jobs/maintenance/family_job.py): each member's outcome, as one value the job writes and its
operator reads (tidemark.result_value). A member's own result (a persist run summary, a
maintenance result) is a file of its own beside it, read and checked as a single stream's is."""

from __future__ import annotations

from tidemark.result_value import ResultValue


class MemberOutcome(ResultValue, frozen=True):
    """One member's run in the driver: ``exit_code`` as the single-stream job's (0 done, 2 bad
    configuration or an unreachable log or lake, 3 offsets lost to retention, 1 another failure),
    ``error`` its one line when it failed, ``summary_file`` the name of its own result in the
    result's folder when it succeeded, ``seconds`` its time in the driver."""

    stream: str
    exit_code: int
    seconds: float
    error: str | None = None
    summary_file: str | None = None


class FamilyDriverResult(ResultValue, frozen=True):
    """The members one driver persisted, one after another, in the order given."""

    members: tuple[MemberOutcome, ...]
    seconds: float

    def failed(self) -> tuple[MemberOutcome, ...]:
        """The members whose run failed."""
        return tuple(member for member in self.members if member.exit_code != 0)
