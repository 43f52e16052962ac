"""What an erasure did, measured: the erasure job writes it, the erasure DAG's task returns it,
the CLI prints it. Rows deleted per table come from the job's own DELETE commits' metrics."""

from __future__ import annotations

from tidemark.result_value import ResultValue


class ErasureResult(ResultValue, frozen=True, forbid_unknown_fields=True):
    """``erasure_id``: the erasure's id in the erasures table (and in its commits' user metadata);
    ``records``: the records erased, each a (partition, position) of the log, now listed in the
    erasures table; ``deleted``: rows each table's DELETE removed ({events, late, quarantine});
    ``event_hours``: the event hours erased records belonged to ("2026-11-28T05:00:00.000Z"),
    which the DAG checks again; ``not_yet_persisted``: {partition: [live's position, the log's
    end]} where live had not read the whole log when the erasure ran: records there are not
    erased yet (run the erasure again once live has caught up)."""

    stream: str
    erasure_id: str
    where: str
    requested_by: str
    requested_at: str
    records: int
    deleted: dict[str, int]
    event_hours: tuple[str, ...]
    not_yet_persisted: dict[str, tuple[str, str]]
    finished_at: str

    def summary(self) -> str:
        deleted = ", ".join(f"{n} from {table}" for table, n in self.deleted.items())
        pending = (
            f"; live had not read {len(self.not_yet_persisted)} partitions to the log's end: run it again once it has"
            if self.not_yet_persisted
            else ""
        )
        return f"{self.stream}: erased {self.records} records where {self.where} ({deleted}){pending}"
