"""What a recovery run did: the result file the recovery job writes and RecoverOperator reads
(then returns as its XCom, and pushes for the LOST alarm). One tagged union of Structs on both
sides of the spark-submit boundary, so neither reads the other's JSON by string keys:
``RecoveryResult`` ({"outcome": "done", ...}) what was recovered and lost, ``RecoveryYielded``
({"outcome": "yielded", ...}) the run claimed and yielded to the live job's batch in flight.

Positions (Kafka offsets, Kinesis sequence numbers) are [start, end), end exclusive. ``lost`` is a list of [start, end] pairs (the shape the
quality summary and the alarms use for spans); times are ISO-8601 UTC text.
"""

from __future__ import annotations

import msgspec

from tidemark.live_batch_wait import LiveBatchYield
from tidemark.result_value import ResultValue


class RecoveredRange(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One replayed range: ``inserted`` rows this run's own commits inserted (MERGE metrics; rows
    another writer filled at the same time do not count), the commit conflicts it retried, and
    the global watermark it routed under (None when the live job had none yet)."""

    start: int
    end: int
    inserted: int
    commit_conflicts_retried: int
    global_watermark: str | None


class RecoveryResult(ResultValue, frozen=True, forbid_unknown_fields=True, tag_field="outcome", tag="done"):
    """A recovery of ``partition`` of ``stream``: the ranges replayed (oldest record first), the
    totals, the offsets already gone from the log (``lost``, never recovered), and the event
    hours the inserted records belong to (sorted, "2026-11-22T01:00:00Z"), which the recover DAG
    checks again."""

    stream: str
    partition: int
    reason: str
    recovered: tuple[RecoveredRange, ...]
    inserted: int
    commit_conflicts_retried: int
    lost: tuple[tuple[int, int], ...]
    event_hours: tuple[str, ...]
    finished_at: str


class RecoveryYielded(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="outcome", tag="yielded"):
    """The recovery of ``partition`` of ``stream`` yielded to the live job's batch in flight
    (``yielded``, tidemark.live_batch_wait): it wrote nothing but its claim, and is run again
    later (RecoverOperator reschedules its task)."""

    stream: str
    partition: int
    reason: str
    yielded: LiveBatchYield


RecoveryOutcome = RecoveryResult | RecoveryYielded


def encode_recovery_outcome(outcome: RecoveryOutcome) -> bytes:
    """The result file's bytes."""
    return msgspec.json.format(msgspec.json.encode(outcome), indent=2) + b"\n"


def decode_recovery_outcome(data: str | bytes) -> RecoveryOutcome:
    """The outcome from its file; msgspec.ValidationError naming the field when it is not one."""
    return msgspec.json.decode(data, type=RecoveryOutcome)
