"""A range lost to retention that a person accepted as lost, so that the live job reads on past it.

Retention (or a Kafka DeleteRecords) can take positions [position, earliest) of a partition
before the live job read them (tidemark.retention_loss). Every tidemark job stops there rather
than skip them. Only a person can decide that the rest of the partition matters more than a loss
nobody can undo; ``tidemark accept-lost`` (or the accept-lost DAG) records that decision as one
ledger row of mode ``accepted_loss``:

    source_partition, start_offset, end_offset  the accepted range [start, end)
    writer      tidemark:<stream>:accepted_loss:<who accepted it>
    read_time   when it was accepted (UTC)
    partition_status  LOST; records, late, quarantined 0, data_records null (unknowable)

and the commit's user metadata carries the request, the reason among it.

The contract of an accepted range:

- **Only what is lost now, from where the live job stands.** The range starts at the partition's
  live position (the end of its furthest live ledger row) and ends at or before the log's earliest
  retained position now: exactly what the job stopped for, or the first part of it.
  ``check_acceptance`` refuses anything else before anything is written.
- **Skipped exactly.** The live job, meeting a loss at its position, passes over the accepted
  part in a batch of its own (a live ledger row [start, end) that read nothing, its ``slicing``
  ``accepted_loss``) and reads on from ``end`` (``settle_losses``).
- **Never a cover for a second loss.** Whatever retention took beyond an accepted end is a loss of
  its own: the job stops for it as for any loss, and the checks report it LOST.

Positions are the log's (tidemark.log_position): Kafka offsets, or Kinesis sequence numbers as
exact ints of any size. A loss that runs to a Kinesis shard's end (no retained record after the
position: its end is unknown) cannot be accepted: the job would not know where to read on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from tidemark.event_time_text import format_event_time
from tidemark.param_error import ParamError
from tidemark.request_value import RequestValue
from tidemark.result_value import ResultValue
from tidemark.retention_loss import LostRange
from tidemark.stream_config import StreamConfig

ACCEPTED_LOSS_MODE = "accepted_loss"
# The ``slicing`` of the live ledger row that passes over an accepted range without reading it.
ACCEPTED_LOSS_SLICING = "accepted_loss"
ACCEPTED_LOSS_STATUS = "LOST"

MAX_REASON_CHARS = 500
_RANGE_TEXT = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*$")
# Who accepted: an OS user, an Airflow user, a DAG run id. No ':' (it ends the writer's name).
_WHO = re.compile(r"^[^:\s][^:]{0,127}$")


class AcceptLostRequestError(ParamError):
    """An accept-lost param is missing or wrong; the message starts with "param '<name>': "."""


class AcceptLostRefused(ValueError):
    """The range is not one the live job lost to retention now: nothing was written."""


class AcceptLostRequest(RequestValue, frozen=True, forbid_unknown_fields=True):
    """Accept positions [``start``, ``end``) of ``stream``'s ``partition`` as lost to retention,
    on the word of ``accepted_by``, for ``reason`` (optional). Crosses every boundary as this one
    value: the DAG's validate task, AcceptLostOperator and the job's ``--request`` argument."""

    error_type: ClassVar[type[ParamError]] = AcceptLostRequestError
    kind: ClassVar[str] = "accept-lost request"

    stream: str
    partition: int
    start: int
    end: int
    accepted_by: str
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.partition < 0:
            raise ValueError(f"partition {self.partition}: partitions are numbered from 0")
        if self.start < 0 or self.end <= self.start:
            raise ValueError(f"range [{self.start}, {self.end}): need 0 <= START < END")
        if not _WHO.match(self.accepted_by):
            raise ValueError(f"accepted_by {self.accepted_by!r}: a name without ':' (at most 128 characters)")
        if self.reason is not None and len(self.reason) > MAX_REASON_CHARS:
            raise ValueError(f"reason: at most {MAX_REASON_CHARS} characters")


def parse_accept_lost_form(
    params: Mapping[str, Any], streams: Mapping[str, StreamConfig], accepted_by: str
) -> AcceptLostRequest:
    """What a person typed (``stream``, ``partition``, ``range`` as "START-END", end exclusive,
    ``reason``), with who accepts it, as a request; AcceptLostRequestError naming the param."""
    name = params.get("stream")
    if not isinstance(name, str) or name not in streams:
        raise AcceptLostRequestError(
            "stream", f"unknown stream {name!r}; configured streams: {', '.join(sorted(streams)) or '(none)'}"
        )
    partition = params.get("partition")
    if isinstance(partition, str) and partition.strip().isdigit():
        partition = int(partition)
    if not isinstance(partition, int) or isinstance(partition, bool) or partition < 0:
        raise AcceptLostRequestError("partition", f"a partition number (0 or more), got {partition!r}")
    text = params.get("range")
    matched = _RANGE_TEXT.match(text) if isinstance(text, str) else None
    if matched is None:
        raise AcceptLostRequestError(
            "range", f'"START-END", the positions the job reported lost, end exclusive (e.g. 40-70); got {text!r}'
        )
    start, end = int(matched.group(1)), int(matched.group(2))
    if end <= start:
        raise AcceptLostRequestError("range", f"{text!r}: START must be below END (END is exclusive)")
    if not isinstance(accepted_by, str) or not _WHO.match(accepted_by.strip()):
        raise AcceptLostRequestError("by", f"who accepts the loss: a name without ':', got {accepted_by!r}")
    reason = params.get("reason") or None
    if reason is not None and (not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS):
        raise AcceptLostRequestError("reason", f"text of at most {MAX_REASON_CHARS} characters")
    return AcceptLostRequest(name, partition, start, end, accepted_by.strip(), reason.strip() if reason else None)


@dataclass(frozen=True, order=True)
class AcceptedLoss:
    """One accepted range of ``partition``: [start, end), accepted by ``accepted_by`` at
    ``accepted_at_ms`` (ms since the epoch, UTC)."""

    partition: int
    start: int
    end: int
    accepted_by: str
    accepted_at_ms: int

    @staticmethod
    def writer(stream: str, accepted_by: str) -> str:
        """The ledger row's ``writer``: tidemark:<stream>:accepted_loss:<who>."""
        return f"tidemark:{stream}:{ACCEPTED_LOSS_MODE}:{accepted_by}"

    @classmethod
    def from_ledger(cls, partition: int, start: int, end: int, writer: str | None, read_time_ms: int | None):
        """The acceptance an ``accepted_loss`` ledger row records."""
        who = (writer or "").split(":", 3)[-1] if writer and writer.count(":") >= 3 else "(unknown)"
        return cls(partition, start, end, who, read_time_ms or 0)

    def describe(self, position_name: str = "offset") -> str:
        """``offsets [40, 70) accepted as lost by alice at 2026-11-28T14:00:00.000Z``."""
        return (
            f"{position_name}s [{self.start}, {self.end}) accepted as lost by {self.accepted_by} "
            f"at {format_event_time(self.accepted_at_ms)}"
        )


def check_acceptance(
    request: AcceptLostRequest,
    live_position: int | None,
    lost: Iterable[LostRange],
    accepted: Sequence[AcceptedLoss],
    position_name: str = "offset",
) -> bool:
    """Whether ``request`` is to be written: True; False when the very same range is accepted
    already (a repeated request writes nothing twice). AcceptLostRefused, saying what is lost
    and what to do, for anything else.

    ``live_position``: the partition's live position (None: the live job never read it);
    ``lost``: what the log says is lost at that position now (LostRange, at most one for the
    partition); ``accepted``: the partition's accepted ranges so far."""
    words = f"{position_name}s"
    where = f"partition {request.partition} of stream {request.stream}"
    asked = f"{words} [{request.start}, {request.end})"
    for earlier in accepted:
        if earlier.partition != request.partition:
            continue
        if (earlier.start, earlier.end) == (request.start, request.end):
            return False
        if earlier.start < request.end and request.start < earlier.end:
            raise AcceptLostRefused(
                f"{asked} of {where} overlap an accepted loss: {earlier.describe(position_name)}; nothing was written"
            )
    if live_position is None:
        raise AcceptLostRefused(
            f"{where} has no live ledger row: the live job never read it, so nothing was lost from its position; "
            "nothing was written"
        )
    here = next((r for r in lost if r.partition == request.partition), None)
    if here is None:
        raise AcceptLostRefused(
            f"nothing is lost at {where}'s live position {live_position}: the log still holds it, so the live job "
            f"reads on by itself; {asked} was not accepted and nothing was written"
        )
    if here.end is None:
        raise AcceptLostRefused(
            f"{words} from {here.start} to the shard's end of {where} expired unread, and the shard retains no later "
            "record: there is no position to read on from, so this loss cannot be accepted (nothing was written)"
        )
    lost_text = f"{words} [{here.start}, {here.end})"
    if request.start != here.start:
        raise AcceptLostRefused(
            f"{asked} does not start where {where} is lost: the live job reads next at {here.start} and the log has "
            f"lost {lost_text}; accept --range {here.start}-{here.end} (nothing was written)"
        )
    if request.end > here.end:
        raise AcceptLostRefused(
            f"{asked} reaches past what the log lost: {lost_text} is lost, from {here.end} on it is still retained "
            f"and will be read; accept --range {here.start}-{here.end} (nothing was written)"
        )
    return True


def settle_losses(
    lost: Iterable[LostRange], accepted: Iterable[tuple[int, int, int]]
) -> tuple[dict[int, int], tuple[LostRange, ...]]:
    """What the live job does with the ranges ``lost`` at its positions, given the ``accepted``
    ones ((partition, start, end)): the partitions to move past an accepted range, {partition:
    accepted end}, and the lost ranges nobody accepted (the job stops for those).

    An accepted range counts only where it starts exactly at the lost range's start. When it ends
    before the lost range does, the partition moves to its end, and what lies beyond is lost
    unaccepted at the next look: a second loss stops the job, it is never covered by the first."""
    ends = {(partition, start): end for partition, start, end in accepted}
    skips, unaccepted = {}, []
    for range_ in lost:
        end = ends.get((range_.partition, range_.start))
        if end is not None and end > range_.start and (range_.end is None or end <= range_.end):
            skips[range_.partition] = end
        else:
            unaccepted.append(range_)
    return skips, tuple(unaccepted)


def accepted_from(ranges: Iterable[AcceptedLoss]) -> tuple[tuple[int, int, int], ...]:
    """The (partition, start, end) of accepted ranges, sorted: what the log source is given."""
    return tuple(sorted((r.partition, r.start, r.end) for r in ranges))


def passed_accepted(position: int, accepted: Iterable[AcceptedLoss]) -> int:
    """``position`` moved past every accepted range that starts where it stands (in a chain):
    where the live job reads next once it has passed them."""
    by_start = {r.start: r.end for r in accepted}
    seen = set()
    while position in by_start and position not in seen:
        seen.add(position)
        position = by_start[position]
    return position


class AcceptLostResult(ResultValue, frozen=True, forbid_unknown_fields=True):
    """What an accept-lost run did: the accepted range of ``partition`` [start, end), who and when
    (ISO-8601, UTC); ``written`` False when that very range was accepted before (by
    ``accepted_by`` at ``accepted_at``) and this run wrote nothing."""

    stream: str
    partition: int
    start: int
    end: int
    accepted_by: str
    accepted_at: str
    written: bool
    reason: str | None = None
