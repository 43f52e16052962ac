"""What a recovery run replays: one stream's partition, the offset ranges it is missing, and
whether the live job must be started again afterwards.

One typed value crosses every boundary: the quality run's result and XCom, the TriggerDagRun
conf, the recover DAG's validate task, RecoverOperator and the recovery job's ``--request``
argument all carry a ``RecoveryRequest`` as its JSON (``to_json``/``from_json`` for the
JSON-able mapping Airflow stores, ``encode``/``decode`` for the text a process receives), so
nothing is turned into text and parsed again on the way. Its JSON::

    {"stream": "telemetry", "partition": 2, "ranges": [{"start": 100, "end": 200}],
     "reason": "STOP: ...", "restart_live": true}

People fill the recover DAG's params form (and the ``tidemark recover`` command) with a
partition and ranges as text, "100-200,300-350"; ``parse_recovery_form`` turns that into the
same value once, failing naming the param. Ranges are sorted, with adjacent ones merged, so a
request is in one canonical form whoever wrote it.

``restart_live`` is the decision, not the prose: True when the live job itself stopped reading
the partition (a STOP or STALL verdict), so the recover DAG starts a persist run once the ranges
are replayed; ``reason`` is for people and the ledger's log only.

On a Kinesis stream the partition is a shard's number and the ranges are sequence numbers (56
digits in the wild: JSON carries them as exact integers, the form as digits); any shard number
passes here, and the recovery job checks it against the stream's listing.

Retention decides what can still be replayed: offsets below a partition's earliest retained
offset are lost and must be reported as lost, never skipped silently; what is left goes oldest
record first, because those records leave the log first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import msgspec

from tidemark.offset_coverage import OffsetRange, merge_ranges
from tidemark.param_error import ParamError
from tidemark.request_value import RequestValue
from tidemark.stream_config import StreamConfig

__all__ = [
    "OffsetRange",
    "RecoveryRequest",
    "RecoveryRequestError",
    "check_recovery_request",
    "parse_recovery_form",
    "recovery_request_from_params",
    "split_by_retention",
    "order_by_retention_deadline",
]

MAX_REASON_CHARS = 500

_RANGE_TEXT = re.compile(r"^\s*(-?\d+)\s*-\s*(-?\d+)\s*$")
# msgspec names the offending field as "... - at `$.partition`" or "... field `ranges`".


class RecoveryRequestError(ParamError):
    """A recovery param is missing or wrong; the message starts with "param '<name>': "."""


class RecoveryRequest(RequestValue, frozen=True, forbid_unknown_fields=True):
    """Replay ``ranges`` of ``partition`` of ``stream``; ``reason`` says why, for the ledger and
    the report (1 to 500 characters); ``restart_live``: start the live job again afterwards,
    because it was the cause. ``ranges`` are sorted, disjoint and not adjacent (at least one);
    a list given for them is kept as a tuple."""

    error_type: ClassVar[type[ParamError]] = RecoveryRequestError
    kind: ClassVar[str] = "recovery request"

    stream: str
    partition: int
    ranges: tuple[OffsetRange, ...]
    reason: str
    restart_live: bool = False

    def __post_init__(self) -> None:
        msgspec.structs.force_setattr(self, "ranges", tuple(self.ranges))
        if self.partition < 0:
            raise ValueError(f"partition {self.partition}: partitions are numbered from 0")
        if not self.ranges:
            raise ValueError("a recovery request needs at least one offset range")
        for previous, current in zip(self.ranges, self.ranges[1:]):
            if current.start <= previous.end:
                raise ValueError(f"ranges must be sorted, disjoint and merged; {current} follows {previous}")
        if not self.reason.strip() or len(self.reason) > MAX_REASON_CHARS:
            raise ValueError(f"reason: 1 to {MAX_REASON_CHARS} characters, got {len(self.reason.strip())}")


def check_recovery_request(request: RecoveryRequest, streams: Mapping[str, StreamConfig]) -> RecoveryRequest:
    """``request`` if its stream is configured and its partition can exist in that stream;
    RecoveryRequestError naming ``stream`` or ``partition`` otherwise.

    A Kafka topic's partitions are 0 … partitions − 1. A Kinesis stream's shards are numbered by
    their ids and change with resharding, so any shard number passes here (no network at parse
    time); the recovery job checks the shard against the stream's listing before any work."""
    stream = streams.get(request.stream)
    if stream is None:
        raise RecoveryRequestError(
            "stream", f"unknown stream {request.stream!r}; configured streams: {', '.join(sorted(streams)) or '(none)'}"
        )
    refusal = stream.partition_refusal(request.partition)
    if refusal is not None:
        raise RecoveryRequestError("partition", refusal)
    return request


def recovery_request_from_params(params: Mapping[str, Any], streams: Mapping[str, StreamConfig]) -> RecoveryRequest:
    """The recover DAG's params, from either of its two callers, as one checked request.

    A person's form (or ``tidemark recover``) gives ``ranges`` as text, "100-200,300-350":
    ``parse_recovery_form``. The quality, sweep and backfill DAGs trigger with a request's
    ``to_json()``, whose ``ranges`` is a list of {"start", "end"}: ``RecoveryRequest.from_json``,
    then checked against the configuration. Either way, RecoveryRequestError naming the param.
    """
    if isinstance(params.get("ranges"), str):
        return parse_recovery_form(params, streams)
    return check_recovery_request(RecoveryRequest.from_json(params), streams)


def parse_recovery_form(params: Mapping[str, Any], streams: Mapping[str, StreamConfig]) -> RecoveryRequest:
    """Validate what a person typed into a RecoveryRequest; RecoveryRequestError otherwise.

    ``stream``: a configured stream's name. ``partition``: an int (or a string of digits) the
    stream can have as a partition (StreamConfig.partition_refusal). ``ranges``: "start-end,start-end", end exclusive; they may not
    overlap, adjacent ones are merged. ``reason``: a non-empty text of at most 500 characters.
    ``restart_live``: true or false (absent: false).
    """
    name = params.get("stream")
    if name is None:
        raise RecoveryRequestError("stream", f"required: one of {', '.join(sorted(streams)) or '(none)'}")
    if not isinstance(name, str) or name not in streams:
        raise RecoveryRequestError(
            "stream", f"unknown stream {name!r}; configured streams: {', '.join(sorted(streams)) or '(none)'}"
        )
    stream = streams[name]
    partition = _whole_number("partition", params.get("partition"))
    refusal = stream.partition_refusal(partition)
    if refusal is not None:
        raise RecoveryRequestError("partition", refusal)
    ranges = _merged(_parse_ranges(params.get("ranges"), stream.source.position_type.name))
    reason = params.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise RecoveryRequestError("reason", "say why this recovery runs (a non-empty text)")
    if len(reason.strip()) > MAX_REASON_CHARS:
        raise RecoveryRequestError("reason", f"{len(reason.strip())} characters; at most {MAX_REASON_CHARS}")
    restart_live = params.get("restart_live", False)
    if not isinstance(restart_live, bool):
        raise RecoveryRequestError("restart_live", f"true or false, got {restart_live!r}")
    request = RecoveryRequest(name, partition, tuple(ranges), reason.strip(), restart_live)
    return check_recovery_request(request, streams)


def split_by_retention(
    ranges: Sequence[OffsetRange], earliest_offset: int
) -> tuple[list[OffsetRange], list[OffsetRange]]:
    """(recoverable, lost): the offsets of ``ranges`` at or after the partition's earliest
    retained offset can still be read, those below it are gone from the log.

    A range straddling ``earliest_offset`` splits in two; input order is kept in both lists.
    """
    recoverable: list[OffsetRange] = []
    lost: list[OffsetRange] = []
    for offsets in ranges:
        if offsets.start < earliest_offset:
            lost.append(OffsetRange(offsets.start, min(offsets.end, earliest_offset)))
        if offsets.end > earliest_offset:
            recoverable.append(OffsetRange(max(offsets.start, earliest_offset), offsets.end))
    return recoverable, lost


def order_by_retention_deadline(
    items: Sequence[tuple[int, OffsetRange, int | None]],
) -> list[tuple[int, OffsetRange, int | None]]:
    """Items (partition, range, oldest record time in ms UTC or None) in the order to replay them.

    Oldest record first: retention deletes by age, so it is the closest to being lost. Items
    whose record time is unknown go last; ties go by partition, then by range start.
    """
    return sorted(items, key=lambda item: (item[2] is None, item[2] or 0, item[0], item[1].start))


def _parse_ranges(value: Any, position: str = "offset") -> list[OffsetRange]:
    """Ranges of ``position``s (what the stream's log calls them: offset, sequence number)."""
    if value is None:
        raise RecoveryRequestError("ranges", f"required: the {position} ranges to replay, e.g. 100-200,300-350")
    if not isinstance(value, str):
        raise RecoveryRequestError("ranges", f"expected text like 100-200,300-350, got {type(value).__name__}")
    ranges = []
    for part in (part.strip() for part in value.split(",")):
        if not part:
            continue
        match = _RANGE_TEXT.match(part)
        if not match:
            raise RecoveryRequestError(
                "ranges", f"{part!r} is not start-end with whole-number {position}s, e.g. 100-200"
            )
        start, end = int(match.group(1)), int(match.group(2))
        if start < 0 or end < 0:
            raise RecoveryRequestError("ranges", f"{part}: {position}s are never negative")
        if start >= end:
            raise RecoveryRequestError(
                "ranges", f"{part}: start after end; a range is start-end with start < end, end exclusive"
            )
        ranges.append(OffsetRange(start, end))
    if not ranges:
        raise RecoveryRequestError("ranges", "no ranges given; name at least one, e.g. 100-200")
    return ranges


def _whole_number(param: str, value: Any) -> int:
    if value is None:
        raise RecoveryRequestError(param, "required")
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecoveryRequestError(param, f"expected a whole number, got {value!r}")
    return value


def _merged(ranges: list[OffsetRange]) -> list[OffsetRange]:
    ordered = sorted(ranges)
    # Sorted by start, any two overlapping ranges imply a neighbouring pair that overlaps.
    for previous, current in zip(ordered, ordered[1:]):
        if current.start < previous.end:
            raise RecoveryRequestError("ranges", f"{previous} and {current} overlap; list each offset once")
    return merge_ranges(ordered)
