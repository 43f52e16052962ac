"""What a recovery run replays: one stream's partition and the offset ranges it is missing.

The quality DAG triggers the recover DAG with these params, and people fill them in Airflow's
params form; both go through ``parse_recovery_request`` once, which fails naming the param.
Ranges come back sorted, with adjacent ones merged, so a request is in one canonical form
whoever wrote it. Retention decides what can still be replayed: offsets below a partition's
earliest retained offset are lost and must be reported as lost, never skipped silently; what
is left goes oldest record first, because those records leave the log first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from tidemark.offset_coverage import OffsetRange, merge_ranges
from tidemark.param_error import ParamError
from tidemark.stream_config import StreamConfig

__all__ = [
    "OffsetRange",
    "RecoveryRequest",
    "RecoveryRequestError",
    "parse_recovery_request",
    "split_by_retention",
    "order_by_retention_deadline",
]

MAX_REASON_CHARS = 500

_RANGE_TEXT = re.compile(r"^\s*(-?\d+)\s*-\s*(-?\d+)\s*$")


class RecoveryRequestError(ParamError):
    """A recovery param is missing or wrong; the message starts with "param '<name>': "."""


@dataclass(frozen=True)
class RecoveryRequest:
    """Replay ``ranges`` of ``partition`` of ``stream``; ``reason`` says why, for the ledger and
    the report. ``ranges`` are sorted, disjoint and not adjacent (at least one)."""

    stream: str
    partition: int
    ranges: tuple[OffsetRange, ...]
    reason: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "ranges", tuple(self.ranges))
        if not self.ranges:
            raise ValueError("a recovery request needs at least one offset range")
        for previous, current in zip(self.ranges, self.ranges[1:]):
            if current.start <= previous.end:
                raise ValueError(f"ranges must be sorted, disjoint and merged; {current} follows {previous}")

    def to_json(self) -> dict:
        return {
            "stream": self.stream,
            "partition": self.partition,
            "ranges": [r.to_json() for r in self.ranges],
            "reason": self.reason,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "RecoveryRequest":
        return cls(
            data["stream"],
            data["partition"],
            tuple(OffsetRange.from_json(r) for r in data["ranges"]),
            data["reason"],
        )


def parse_recovery_request(params: Mapping[str, Any], streams: Mapping[str, StreamConfig]) -> RecoveryRequest:
    """Validate a recover run's params into a RecoveryRequest; RecoveryRequestError otherwise.

    ``stream``: a configured stream's name. ``partition``: an int (or a string of digits) in
    [0, partitions of the stream). ``ranges``: [[start, end], ...], [{"start": .., "end": ..}, ...]
    or "start-end,start-end", end exclusive; they may not overlap, adjacent ones are merged.
    ``reason``: a non-empty text of at most 500 characters.
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
    if not 0 <= partition < stream.source.partitions:
        raise RecoveryRequestError(
            "partition",
            f"partition {partition} is outside [0, {stream.source.partitions}): "
            f"stream {name!r} has {stream.source.partitions} partitions",
        )
    ranges = _merged(_parse_ranges(params.get("ranges")))
    reason = params.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise RecoveryRequestError("reason", "say why this recovery runs (a non-empty text)")
    if len(reason.strip()) > MAX_REASON_CHARS:
        raise RecoveryRequestError("reason", f"{len(reason.strip())} characters; at most {MAX_REASON_CHARS}")
    return RecoveryRequest(name, partition, tuple(ranges), reason.strip())


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


def _parse_ranges(value: Any) -> list[OffsetRange]:
    pairs = _text_pairs(value) if isinstance(value, str) else _listed_pairs(value)
    if not pairs:
        raise RecoveryRequestError("ranges", "no ranges given; name at least one, e.g. 100-200")
    ranges = []
    for shown, raw_start, raw_end in pairs:
        start = _whole_number("ranges", raw_start, f"start of {shown}")
        end = _whole_number("ranges", raw_end, f"end of {shown}")
        if start < 0 or end < 0:
            raise RecoveryRequestError("ranges", f"{shown}: offsets are never negative")
        if start >= end:
            raise RecoveryRequestError(
                "ranges", f"{shown}: start after end; a range is start-end with start < end, end exclusive"
            )
        ranges.append(OffsetRange(start, end))
    return ranges


def _text_pairs(text: str) -> list[tuple[str, str, str]]:
    pairs = []
    for part in (part.strip() for part in text.split(",")):
        if not part:
            continue
        match = _RANGE_TEXT.match(part)
        if not match:
            raise RecoveryRequestError("ranges", f"{part!r} is not start-end with whole-number offsets, e.g. 100-200")
        pairs.append((part, match.group(1), match.group(2)))
    return pairs


def _listed_pairs(value: Any) -> list[tuple[str, Any, Any]]:
    if value is None:
        raise RecoveryRequestError("ranges", "required: the offset ranges to replay, e.g. 100-200,300-350")
    if not isinstance(value, (list, tuple)):
        raise RecoveryRequestError(
            "ranges", f"expected a list of [start, end] pairs or text like 100-200, got {type(value).__name__}"
        )
    return [_pair(item) for item in value]


def _pair(item: Any) -> tuple[str, Any, Any]:
    if isinstance(item, Mapping) and set(item) == {"start", "end"}:
        return f"{item['start']}-{item['end']}", item["start"], item["end"]
    if isinstance(item, (list, tuple)) and len(item) == 2:
        return f"{item[0]}-{item[1]}", item[0], item[1]
    raise RecoveryRequestError(
        "ranges", f"{item!r} is not a [start, end] pair or a {{'start': .., 'end': ..}} mapping"
    )


def _whole_number(param: str, value: Any, what: str = "") -> int:
    where = f"{what}: " if what else ""
    if value is None:
        raise RecoveryRequestError(param, f"{where}required")
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecoveryRequestError(param, f"{where}expected a whole number, got {value!r}")
    return value


def _merged(ranges: list[OffsetRange]) -> list[OffsetRange]:
    ordered = sorted(ranges)
    # Sorted by start, any two overlapping ranges imply a neighbouring pair that overlaps.
    for previous, current in zip(ordered, ordered[1:]):
        if current.start < previous.end:
            raise RecoveryRequestError("ranges", f"{previous} and {current} overlap; list each offset once")
    return merge_ranges(ordered)
