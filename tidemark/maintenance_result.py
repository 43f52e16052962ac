"""What one maintenance run did (spark_jobs/maintenance/job.py), as one value: the file the job
writes for its operator and the task's XCom (tidemark.result_value).

Counts come from the commits' own metrics (OPTIMIZE's numFilesAdded/numFilesRemoved, VACUUM's
numDeletedFiles), never from listing the table before and after: other writers move those.
"""

from __future__ import annotations

from tidemark.result_value import ResultValue


class CompactedHour(ResultValue, frozen=True):
    """One sealed hour of events compacted: ``files_removed`` files rewritten into ``files_added``.
    ``retries``: commits that lost to a concurrent writer (a recovery, a backfill) and were run
    again; ``yielded``: the hour was left for the next run after the last retry lost too."""

    hour: str  # ISO, UTC
    files_removed: int
    files_added: int
    retries: int = 0
    yielded: bool = False


class VacuumedTable(ResultValue, frozen=True):
    """VACUUM of one table: ``files_deleted`` files that commits older than the retention removed."""

    table: str
    files_deleted: int


class MaintenanceResult(ResultValue, frozen=True):
    stream: str
    compacted: tuple[CompactedHour, ...] = ()
    vacuumed: tuple[VacuumedTable, ...] = ()
    seconds: float = 0.0

    def summary(self) -> str:
        """One line for the task log and the CLI."""
        done = [h for h in self.compacted if not h.yielded]
        yielded = [h for h in self.compacted if h.yielded]
        removed = sum(h.files_removed for h in done)
        added = sum(h.files_added for h in done)
        deleted = sum(v.files_deleted for v in self.vacuumed)
        return (
            f"{self.stream}: {len(done)} sealed hours compacted ({removed} files into {added})"
            + (f", {len(yielded)} left for the next run (a concurrent writer won every retry)" if yielded else "")
            + f"; VACUUM deleted {deleted} files in {len(self.vacuumed)} tables; {self.seconds:.1f} s"
        )
