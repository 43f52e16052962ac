"""What a backfill run reads and where it writes: an event-time range of some of a stream's partitions.

People fill these params in Airflow's form; the daily reconciliation builds them for the
previous day. Both go through ``parse_backfill_request`` once, which fails naming the param
before any work. Params are ISO-8601 times with a UTC offset, start inclusive, end exclusive.

The result is one typed value, ``BackfillRequest``, that crosses every boundary as its JSON: the
validate task's XCom, BackfillOperator and the backfill job's one ``--request`` argument
(``to_json``/``from_json`` for the mapping Airflow stores, ``encode``/``decode`` for the text a
process receives)::

    {"stream": "telemetry", "start_ms": 1763683200000, "end_ms": 1763769600000,
     "partitions": [0, 1, 2, 3], "shadow": "manual_2026_11_22t10_00_00_00_00", "compare": true}

The target is either the stream's own tables (``shadow is None``: insert-only, so a backfill
over offsets the lake already holds writes nothing twice) or a shadow table set named by the
run, beside the stream's tables, which nothing else reads: that is how a backfill is compared
with what live wrote.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

import msgspec

from tidemark.event_time_text import format_event_time, parse_event_time
from tidemark.param_error import ParamError
from tidemark.request_value import RequestValue
from tidemark.stream_config import StreamConfig

TARGETS = ("events", "shadow")
_SHADOW_NAME = re.compile(r"^[a-z0-9][a-z0-9_]{0,79}$")
# msgspec names the offending field as "... - at `$.partitions`" or "... field `shadow`".


class BackfillRequestError(ParamError):
    """A backfill param is missing or wrong; the message starts with "param '<name>': "."""


class BackfillRequest(RequestValue, frozen=True, forbid_unknown_fields=True):
    """Backfill [start_ms, end_ms) (ms since the epoch, UTC) of ``partitions`` of ``stream`` into
    its tables (``shadow`` None) or into the shadow table set ``shadow``; ``compare`` (shadow
    only): compare the shadow set with live afterwards. ``partitions`` are sorted and distinct; a
    list given for them is kept as a tuple. Empty: every partition the log has, which for a
    Kinesis stream is known only when the job lists its shards (they change with resharding);
    ``check_backfill_request`` fills in a Kafka topic's.

    The times are the log's: a Kafka record's timestamp, a Kinesis record's arrival time
    (ApproximateArrivalTimestamp, Kinesis's only time index), never the payload's event time."""

    error_type: ClassVar[type[ParamError]] = BackfillRequestError
    kind: ClassVar[str] = "backfill request"

    stream: str
    start_ms: int
    end_ms: int
    partitions: tuple[int, ...]
    shadow: str | None = None
    compare: bool = False

    def __post_init__(self) -> None:
        msgspec.structs.force_setattr(self, "partitions", tuple(self.partitions))
        if self.start_ms >= self.end_ms:
            raise ValueError("a backfill range needs start < end")
        if list(self.partitions) != sorted(set(self.partitions)) or (self.partitions and self.partitions[0] < 0):
            raise ValueError(f"partitions must be distinct, sorted and >= 0, got {list(self.partitions)}")
        if self.shadow is not None and not _SHADOW_NAME.match(self.shadow):
            raise ValueError(
                f"shadow {self.shadow!r} is not a table set name: lowercase letters, digits and _, at most 80"
            )
        if self.compare and self.shadow is None:
            raise ValueError("compare compares a shadow table set with live: it needs a shadow")

    @property
    def target(self) -> str:
        """'events', or 'shadow:<name>'."""
        return "events" if self.shadow is None else f"shadow:{self.shadow}"


def check_backfill_request(request: BackfillRequest, streams: Mapping[str, StreamConfig]) -> BackfillRequest:
    """``request`` if its stream is configured and every partition can exist in that stream (a
    Kafka topic's empty ``partitions`` filled in with all of them); BackfillRequestError naming
    ``stream`` or ``partitions`` otherwise. A Kinesis shard number is checked against the stream's
    listing by the job (no network here)."""
    stream = streams.get(request.stream)
    if stream is None:
        raise BackfillRequestError(
            "stream", f"unknown stream {request.stream!r}; configured streams: {', '.join(sorted(streams)) or '(none)'}"
        )
    partitions = _partitions(list(request.partitions), stream)
    return request if partitions == request.partitions else msgspec.structs.replace(request, partitions=partitions)


def parse_backfill_request(
    params: Mapping[str, Any], streams: Mapping[str, StreamConfig], now_ms: int, run_name: str | None = None
) -> BackfillRequest:
    """Validate a backfill run's params into a BackfillRequest; BackfillRequestError otherwise.

    ``stream``: a configured stream. ``start``, ``end``: ISO-8601 times with a UTC offset, start
    before end, end not after ``now_ms`` (records that do not exist yet cannot be backfilled).
    ``partitions``: empty (all), a list of ints, or "0,2"; each in [0, partitions of the topic),
    or a shard's number for a Kinesis stream (empty stays empty: the job lists the shards).
    ``target``: "events" (the stream's tables, insert-only) or "shadow". ``shadow_name``: the
    shadow table set's name (lowercase letters, digits, _); empty: named after ``run_name``.
    ``compare``: true or false (absent: false); it only applies to a shadow target.
    """
    name = params.get("stream")
    if not isinstance(name, str) or name not in streams:
        raise BackfillRequestError(
            "stream", f"unknown stream {name!r}; configured streams: {', '.join(sorted(streams)) or '(none)'}"
        )
    stream = streams[name]
    start_ms = _time("start", params.get("start"))
    end_ms = _time("end", params.get("end"))
    if start_ms >= end_ms:
        raise BackfillRequestError(
            "end",
            f"{format_event_time(end_ms)} is not after start {format_event_time(start_ms)}: the range is [start, end)",
        )
    if end_ms > now_ms:
        raise BackfillRequestError(
            "end",
            f"{format_event_time(end_ms)} is in the future (now {format_event_time(now_ms)}): "
            "only records already in the log can be backfilled",
        )
    partitions = _partitions(params.get("partitions"), stream)
    target = params.get("target") or "events"
    if target not in TARGETS:
        raise BackfillRequestError("target", f"must be one of {', '.join(TARGETS)}, got {target!r}")
    shadow = None
    if target == "shadow":
        shadow = params.get("shadow_name") or shadow_name_for_run(run_name or "")
        if not isinstance(shadow, str) or not _SHADOW_NAME.match(shadow):
            raise BackfillRequestError(
                "shadow_name", f"{shadow!r} is not a table set name: lowercase letters, digits and _, at most 80"
            )
    compare = params.get("compare", False)
    if not isinstance(compare, bool):
        raise BackfillRequestError("compare", f"true or false, got {compare!r}")
    return BackfillRequest(name, start_ms, end_ms, partitions, shadow, compare and shadow is not None)


def shadow_name_for_run(run_name: str) -> str:
    """A shadow table set's name made from an Airflow run id: 'manual__2026-11-22T10:00:00+00:00'
    → 'manual_2026_11_22t10_00_00_00_00'."""
    return re.sub(r"_+", "_", re.sub(r"[^a-z0-9]", "_", run_name.lower())).strip("_")[:80]


def _time(param: str, value: Any) -> int:
    if value in (None, ""):
        raise BackfillRequestError(param, "required: an ISO-8601 time with a UTC offset, e.g. 2026-11-21T00:00:00Z")
    if not isinstance(value, str):
        raise BackfillRequestError(param, f"expected an ISO-8601 time, got {value!r}")
    try:
        return parse_event_time(value.strip())
    except ValueError as error:
        raise BackfillRequestError(param, str(error)) from None


def _partitions(value: Any, stream: StreamConfig) -> tuple[int, ...]:
    # None: the log's partitions are not known here (Kinesis shards): empty asks the job for all it lists.
    fixed = stream.source.fixed_partitions
    if value in (None, "", []):
        return () if fixed is None else fixed
    items = [item.strip() for item in value.split(",")] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise BackfillRequestError("partitions", f'expected a list of partition numbers or "0,2", got {value!r}')
    partitions = set()
    for item in items:
        if isinstance(item, bool) or not (isinstance(item, int) or (isinstance(item, str) and item.isdigit())):
            raise BackfillRequestError("partitions", f"{item!r} is not a partition number")
        partition = int(item)
        # A Kinesis shard is numbered by its id: the job refuses one the stream does not list.
        refusal = stream.partition_refusal(partition)
        if refusal is not None:
            raise BackfillRequestError("partitions", refusal)
        partitions.add(partition)
    return tuple(sorted(partitions))
