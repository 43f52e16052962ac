"""What one run of the persist pipeline did: the file ``spark_jobs/persist/job.py --run-summary
PATH`` writes when it ends and PersistStreamOperator reads (then turns each sealed hour into an
asset event), and the value recovery and backfill get back from the pipeline in-process. One
Struct on both sides of the spark-submit boundary, so neither reads the other's JSON by string
keys::

    {"stream": "telemetry", "mode": "available_now", "query_id": "5c1e…", "batches": 5,
     "global_watermark": "2026-11-22T03:59:29.999Z",
     "sealed_hours": ["2026-11-22T01:00:00.000Z", "2026-11-22T02:00:00.000Z"],
     "event_hours": ["2026-11-22T01:00:00.000Z", ...], "insert_only_batches": 0, "inserted": 1200,
     "commit_conflicts_retried": 0, "resumed_from_ledger": false, "throttled_calls": null}

Times are ISO-8601 UTC text with milliseconds (tidemark.event_time_text); hours are the start of
the event-time hour [H, H+1h), UTC. What a Struct cannot say -- that the times are UTC, that the
sealed hours ascend and are sealed by ``global_watermark`` under the stream's allowed lateness --
the reader checks (tidemark_airflow.run_summary).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import msgspec

from tidemark.typed_file import encode_indented, write_typed_file

# available_now / continuous: a live run (its trigger); recovery / backfill: a replay of ranges.
RunMode = Literal["available_now", "continuous", "recovery", "backfill"]


class RunSummaryError(ValueError):
    """The run summary is missing or does not keep its contract; the message names the file and
    says what is wrong."""


class PersistRunSummary(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One run of the persist pipeline over ``stream``.

    ``global_watermark`` is G at the end of the run (None while the stream has none yet; then
    ``sealed_hours`` is empty); every hour in ``sealed_hours`` was newly sealed during the run,
    ascending, once each (G ≥ H + 1h + allowed_lateness). ``event_hours`` are the event hours
    the run wrote rows into, ascending. ``batches`` micro-batches ran, ``insert_only_batches``
    of them wrote insert-only (MERGE: ranges another writer may already have filled),
    ``inserted`` rows this run's own commits inserted into events, ``commit_conflicts_retried``
    the Delta commit conflicts it retried. ``resumed_from_ledger``: the run had no checkpoint
    over tables holding the stream and started from the ledger. ``throttled_calls``: calls
    Kinesis throttled (backed off, never failed); None for a Kafka topic. ``query_id`` is
    Spark's streaming query id.
    """

    stream: str
    mode: RunMode
    query_id: str
    batches: int
    global_watermark: str | None
    sealed_hours: tuple[str, ...]
    event_hours: tuple[str, ...]
    insert_only_batches: int
    inserted: int
    commit_conflicts_retried: int
    resumed_from_ledger: bool
    throttled_calls: int | None = None

    def encode(self) -> bytes:
        """The file's bytes: indented JSON (a person opens it too), ending in a newline."""
        return encode_indented(self)

    def write(self, path: str | Path) -> None:
        """Write the summary to ``path``, creating its folder."""
        write_typed_file(path, self)

    @classmethod
    def decode(cls, data: str | bytes, source: str = "<text>") -> PersistRunSummary:
        """The summary in ``data``; RunSummaryError naming ``source`` (the file) and the field
        when it is not one."""
        try:
            return msgspec.json.decode(data, type=cls)
        except msgspec.DecodeError as error:
            raise RunSummaryError(
                f"run summary {source}: not a persist run summary tidemark can read ({error}); "
                "the persist job wrote a summary tidemark cannot trust."
            ) from None

    @classmethod
    def read(cls, path: str | Path) -> PersistRunSummary:
        """The summary in the file at ``path``; RunSummaryError naming it when it is missing or
        not one."""
        try:
            data = Path(path).read_bytes()
        except FileNotFoundError:
            raise RunSummaryError(
                f"run summary {path}: the persist job succeeded but wrote no run summary. The job must "
                "support --run-summary, and its driver must run where the task runs (spark-submit in "
                "client deploy mode), since the file is read from the task's local disk."
            ) from None
        return cls.decode(data, source=str(path))
