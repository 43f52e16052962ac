"""What a quarantine re-drive did, measured: the redrive job writes it, the redrive DAG's task
returns it, the CLI prints it. Counts of rows moved come from the run's own MERGE commits, so a
concurrent re-drive that moved the same records does not count here."""

from __future__ import annotations

from tidemark.result_value import ResultValue


class RedriveResult(ResultValue, frozen=True, forbid_unknown_fields=True):
    """``candidates``: quarantine rows of the reason (and hours) not yet in events or late;
    ``moved_to_events`` and ``moved_to_late``: rows this run inserted; ``already_moved``:
    candidates another writer had inserted by the time this run's MERGE committed;
    ``still_refused``: candidates that still do not decode, by the reason they have now;
    ``event_hours``: the event hours moved records belong to ("2026-11-28T05:00:00Z"), which
    the DAG checks again; ``erased``: candidates that decode now and an erasure names (its
    position erased, or its values meeting an erasure's predicate), left where they are."""

    stream: str
    reason: str
    hours_from: str | None
    hours_to: str | None
    candidates: int
    moved_to_events: int
    moved_to_late: int
    already_moved: int
    still_refused: dict[str, int]
    event_hours: tuple[str, ...]
    finished_at: str
    erased: int = 0  # candidates an erasure names (tidemark erase): left out, never moved
