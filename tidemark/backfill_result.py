"""What a backfill run did, or why it refused to start: the result file the backfill job writes
and BackfillOperator reads (then returns as its XCom). One tagged union of Structs on both sides
of the spark-submit boundary, so neither reads the other's JSON by string keys.

``BackfillRefusal`` ({"outcome": "refused", "error": ...}): the request was refused before any
work (a range beyond retention, a partition the topic lacks, a shadow set in use), the message
naming the param. ``BackfillYielded`` ({"outcome": "yielded", ...}): the run claimed its offsets
and yielded to the live job's batch in flight; it runs again later. ``BackfillResult`` ({"outcome": "done", ...}): what was read and written; a
non-empty ``lost`` means part of the range had already left the log and the rest was backfilled.

Offsets are [start, end), end exclusive; times are ISO-8601 UTC text.
"""

from __future__ import annotations

import msgspec

from tidemark.live_batch_wait import LiveBatchYield
from tidemark.reconciliation import ComparisonWithLive
from tidemark.recovery_request import RecoveryRequest


class LostSpan(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Records of the range the log no longer holds in ``partition``: ``offsets`` [first,
    earliest retained) (first None: the lake never saw that part; earliest None: the partition
    retains nothing, a Kinesis shard quiet for longer than its retention), log times [start, end)."""

    partition: int
    offsets: tuple[int | None, int | None]
    event_time: tuple[str, str]


class BackfillResult(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="outcome", tag="done"):
    """A backfill of [start, end) of ``partitions`` of ``stream`` into ``target`` ("events" or
    "shadow:<name>"): the offsets read per partition (``ranges``, keys are partition numbers as
    text), the records routed to events, late and quarantine, the wall time and rate, the event
    hours written, ``inserted``/``commit_conflicts_retried`` (into events only: rows this run's
    own commits inserted; None for a shadow set), the lost parts and the comparison with live
    (None unless the request asked for it).

    ``window_by`` says which time [start, end) is of: None for a Kafka topic (the records' log
    timestamps, as before it existed), for a Kinesis stream the records' arrival time
    (ApproximateArrivalTimestamp through AT_TIMESTAMP), which is not their event time. ``ranges``
    are then shard sequence numbers, and ``partitions`` every shard the stream listed when the
    request named none."""

    stream: str
    start: str
    end: str
    partitions: tuple[int, ...]
    shadow: str | None
    target: str
    ranges: dict[str, tuple[int, int]]
    batches: int
    records: int
    late: int
    quarantined: int
    seconds: float
    records_per_second: int | None
    event_hours: tuple[str, ...]
    inserted: int | None
    commit_conflicts_retried: int | None
    lost: tuple[LostSpan, ...]
    comparison: ComparisonWithLive | None
    window_by: str | None = None

    @property
    def recovery_requests(self) -> tuple[RecoveryRequest, ...]:
        """The recoveries of what live lacks, one per partition (none when not compared)."""
        return self.comparison.recovery_requests if self.comparison is not None else ()

    def to_json(self) -> dict:
        """The JSON-able mapping: the backfill task's XCom."""
        # Through JSON, so sequences come back as lists: exactly what a reader of the JSON sees.
        return msgspec.json.decode(msgspec.json.encode(self))


class BackfillRefusal(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="outcome", tag="refused"):
    """The backfill refused ``error`` before any work (the message names the param)."""

    error: str


class BackfillYielded(msgspec.Struct, frozen=True, forbid_unknown_fields=True, tag_field="outcome", tag="yielded"):
    """The backfill of ``stream`` into ``target`` yielded to the live job's batch in flight
    (``yielded``, tidemark.live_batch_wait): it wrote nothing but its claim, and is run again
    later (BackfillOperator reschedules its task)."""

    stream: str
    target: str
    yielded: LiveBatchYield


BackfillOutcome = BackfillResult | BackfillRefusal | BackfillYielded


def encode_backfill_outcome(outcome: BackfillOutcome) -> bytes:
    """The result file's bytes."""
    return msgspec.json.format(msgspec.json.encode(outcome), indent=2) + b"\n"


def backfill_result_from(document: object, source: str) -> BackfillResult:
    """The result in ``document`` (decoded JSON: the backfill task's XCom), or the value if it
    already is one; ValueError naming ``source`` and the field when it is not one."""
    if isinstance(document, BackfillResult):
        return document
    try:
        return msgspec.convert(document, BackfillResult)
    except msgspec.ValidationError as error:
        raise ValueError(f"{source} is not a backfill result tidemark can read ({error})") from None


def decode_backfill_outcome(data: str | bytes) -> BackfillOutcome:
    """The outcome from its file; msgspec.ValidationError naming the field when it is not one."""
    return msgspec.json.decode(data, type=BackfillOutcome)
