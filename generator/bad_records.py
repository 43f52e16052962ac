"""Malformed record values, so the persist job's quarantine is exercised on purpose.

Every kind is one way a real producer breaks; each must be quarantined by the decoder, never
persisted and never allowed to move a watermark. Kinds are cycled deterministically, so a run with
``--bad-records 7`` or more produces each kind at least once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import NamedTuple

from tidemark.event_time_text import format_event_time

MALFORMED_JSON = "malformed_json"
NOT_AN_OBJECT = "not_an_object"
MISSING_EVENT_TIME = "missing_event_time"
UNPARSABLE_EVENT_TIME = "unparsable_event_time"
WRONG_TYPE = "wrong_type"
EMPTY_VALUE = "empty_value"
FAR_FUTURE_EVENT_TIME = "far_future_event_time"

BAD_RECORD_KINDS = (
    MALFORMED_JSON,
    NOT_AN_OBJECT,
    MISSING_EVENT_TIME,
    UNPARSABLE_EVENT_TIME,
    WRONG_TYPE,
    EMPTY_VALUE,
    FAR_FUTURE_EVENT_TIME,
)

# A device whose clock jumped a year ahead: far enough that no skew tolerance can admit it.
FAR_FUTURE_AHEAD_MS = 365 * 86_400_000


class BadRecord(NamedTuple):
    """A bad value for ``partition``, due at ``nominal_time_ms`` (ms, UTC), which is also its Kafka timestamp."""

    nominal_time_ms: int
    partition: int
    kind: str
    key: bytes
    value: bytes


def bad_record_value(kind: str, nominal_time_ms: int, device_id: str, event_time_field: str = "event_time") -> bytes:
    """The raw value of one bad record of ``kind``, as it would come from a broken producer."""
    payload = {
        "device_id": device_id,
        event_time_field: format_event_time(nominal_time_ms),
        "lat": 52.37,
        "lon": 4.89,
        "battery": 50,
    }
    if kind == MALFORMED_JSON:
        # A value cut off mid-write.
        return json.dumps(payload).encode()[:-12]
    if kind == NOT_AN_OBJECT:
        return json.dumps([payload]).encode()
    if kind == MISSING_EVENT_TIME:
        del payload[event_time_field]
    elif kind == UNPARSABLE_EVENT_TIME:
        payload[event_time_field] = "yesterday"
    elif kind == WRONG_TYPE:
        payload["battery"] = "full"
    elif kind == EMPTY_VALUE:
        return b""
    elif kind == FAR_FUTURE_EVENT_TIME:
        payload[event_time_field] = format_event_time(nominal_time_ms + FAR_FUTURE_AHEAD_MS)
    else:
        raise ValueError(f"unknown bad record kind {kind!r}; known kinds: {', '.join(BAD_RECORD_KINDS)}")
    return json.dumps(payload).encode()


def bad_records_per_partition(total: int, partitions: int) -> list[int]:
    """How many of ``total`` bad records each partition gets: round-robin, the first ones get the rest."""
    return [len(range(partition, total, partitions)) for partition in range(partitions)]


def partition_bad_records(
    partition: int,
    partitions: int,
    total: int,
    start_ms: int,
    end_ms: int,
    event_time_field: str = "event_time",
) -> Iterator[BadRecord]:
    """This partition's share of ``total`` bad records, spread evenly over [start_ms, end_ms), ascending.

    Bad record j (0..total-1, over all partitions) goes to partition j % partitions and is of kind
    j % len(BAD_RECORD_KINDS), so every partition sees every kind when there are enough of them.
    """
    device_id = f"scooter-p{partition}-broken"
    numbers = range(partition, total, partitions)
    for position, number in enumerate(numbers):
        # Middle of the position-th of len(numbers) equal slices of the window.
        nominal = start_ms + (2 * position + 1) * (end_ms - start_ms) // (2 * len(numbers))
        kind = BAD_RECORD_KINDS[number % len(BAD_RECORD_KINDS)]
        yield BadRecord(
            nominal, partition, kind, device_id.encode(), bad_record_value(kind, nominal, device_id, event_time_field)
        )
