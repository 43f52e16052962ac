"""What one maintenance run did (spark_jobs/maintenance/job.py), as one value: the file the job
writes for its operator and the task's XCom (tidemark.result_value).

Counts come from the commits' own metrics (OPTIMIZE's numFilesAdded/numFilesRemoved, VACUUM's
numDeletedFiles), never from listing the table before and after: other writers move those.
"""

from __future__ import annotations

from tidemark.result_value import ResultValue


class CompactedHours(ResultValue, frozen=True):
    """Sealed hours of one day of events compacted in one commit (one OPTIMIZE): ``hours`` (ISO,
    UTC) whose ``files_removed`` files were rewritten into ``files_added``. ``retries``: commits
    that lost to a concurrent writer (a recovery, a backfill) and were run again; ``yielded``: the
    hours were left for the next run after the last retry lost too."""

    date: str  # ISO, UTC
    hours: tuple[str, ...]
    files_removed: int
    files_added: int
    retries: int = 0
    yielded: bool = False


class CompactedTable(ResultValue, frozen=True):
    """A small table (the ledger, the seals) compacted whole in one commit: ``files_removed`` files
    rewritten into ``files_added``. ``retries``/``yielded`` as for compacted hours."""

    table: str
    files_removed: int
    files_added: int
    retries: int = 0
    yielded: bool = False


class VacuumedTable(ResultValue, frozen=True):
    """VACUUM of one table: ``files_deleted`` files that commits older than the retention removed."""

    table: str
    files_deleted: int


class SettledClaims(ResultValue, frozen=True):
    """The claims table settled (tidemark.claims_settlement): ``claims_settled`` claims folded into
    ``settled_ranges`` settled ranges, ``claims_kept`` claims still held by running (or dead,
    not yet covered) writers; the table's rows (claims, release rows, settled ranges) before and
    after, and its data files after. ``retries``/``yielded`` as for compacted hours."""

    claims_settled: int
    claims_kept: int
    settled_ranges: int
    rows_before: int
    rows_after: int
    retries: int = 0
    yielded: bool = False
    files: int = 0


class MaintenanceResult(ResultValue, frozen=True):
    stream: str
    compacted: tuple[CompactedHours, ...] = ()
    vacuumed: tuple[VacuumedTable, ...] = ()
    seconds: float = 0.0
    claims: SettledClaims | None = None
    tables: tuple[CompactedTable, ...] = ()  # the ledger and the seals, when they had gathered files
    # A run the operator's look found nothing to do for (connectors.maintenance_look): why, and no
    # Spark job started; None when the job ran.
    nothing_to_do: str | None = None

    def summary(self) -> str:
        """One line for the task log and the CLI."""
        if self.nothing_to_do is not None:
            return f"{self.stream}: nothing to do ({self.nothing_to_do}); looked in {self.seconds:.1f} s, no Spark job"
        done = [day for day in self.compacted if not day.yielded]
        yielded = sum(len(day.hours) for day in self.compacted if day.yielded)
        removed = sum(day.files_removed for day in done)
        added = sum(day.files_added for day in done)
        deleted = sum(v.files_deleted for v in self.vacuumed)
        return (
            f"{self.stream}: {sum(len(day.hours) for day in done)} sealed hours compacted ({removed} files into {added})"
            + (f", {yielded} left for the next run (a concurrent writer won every retry)" if yielded else "")
            + self._tables_words()
            + self._claims_words()
            + f"; VACUUM deleted {deleted} files in {len(self.vacuumed)} tables; {self.seconds:.1f} s"
        )

    def _tables_words(self) -> str:
        done = [table for table in self.tables if not table.yielded]
        left = [table.table for table in self.tables if table.yielded]
        words = "".join(f"; {t.table} compacted ({t.files_removed} files into {t.files_added})" for t in done)
        return words + "".join(f"; {name} left for the next run (a concurrent writer won every retry)" for name in left)

    def _claims_words(self) -> str:
        claims = self.claims
        if claims is None:
            return ""
        if claims.yielded:
            return "; claims left for the next run (a concurrent writer won every retry)"
        return (
            f"; {claims.claims_settled} claims settled ({claims.rows_before} rows into {claims.rows_after}, "
            f"{claims.claims_kept} still held)"
        )
