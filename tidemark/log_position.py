"""Positions in a partition's log, and the only arithmetic tidemark does on them.

A position is where a partition is read up to: the next record's place, an exclusive range end.
In the core it is a Python ``int`` for every log, exact and ordered whatever its size:

- Kafka: an offset. Offsets are dense longs, but not every offset holds a data record
  (transaction markers, aborted and compacted offsets), so end − start is an upper bound of the
  records in a range, never a count.
- Kinesis: a sequence number. Sequence numbers are sparse decimals (56 digits in the wild, the
  API allows up to 129): end − start means nothing, and they do not fit a long.

So a count of records between two positions is asked of the log that read them
(``records_between``), and a slice of ``n`` records ends where the log says (``position_after``).
A log that does not answer (Kafka's) is dense: the arithmetic is its answer. The one operation
valid for every log is ± 1 on a position, to turn "after record s" into "from s + 1".

In tables and across process boundaries a position has a ``PositionType``: Kafka offsets stay
BIGINT (old lakes keep their rows, unchanged); Kinesis sequence numbers are a fixed-width text
of digits (``position_key``), which orders exactly as the numbers do, in Spark SQL, in Delta's
statistics and in Python.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# Every Kinesis sequence number seen in the wild has 56 digits; 64 leaves room and keeps the
# first 32 characters (Delta's statistics prefix) meaningful.
POSITION_KEY_DIGITS = 64


def position_key(position: int) -> str:
    """The fixed-width text of a position: zero-padded digits, ordered as the numbers are."""
    if position < 0:
        raise ValueError(f"a log position cannot be negative, got {position}")
    text = str(position)
    if len(text) > POSITION_KEY_DIGITS:
        raise ValueError(
            f"position {text} has {len(text)} digits: tidemark keeps positions of up to "
            f"{POSITION_KEY_DIGITS} digits (Kinesis sequence numbers have 56)"
        )
    return text.zfill(POSITION_KEY_DIGITS)


def position_from_key(key: str) -> int:
    """The position ``position_key`` wrote (leading zeros or not); ValueError naming the text."""
    if not isinstance(key, str) or not key.isdigit():
        raise ValueError(f"{key!r} is not a log position (decimal digits)")
    return int(key)


@dataclass(frozen=True)
class PositionType:
    """How a stream's positions are stored: the SQL type of its position columns and the
    conversions between the core's ``int`` and a column value."""

    name: str  # what a position is called in messages: offset | sequence number
    sql_type: str  # BIGINT | STRING
    dense: bool  # every position between two is one (Kafka): counts may use arithmetic

    def to_column(self, position: int | None) -> int | str | None:
        if position is None:
            return None
        return position if self.sql_type == "BIGINT" else position_key(position)

    def to_json(self, position: int) -> int | str:
        """A position for a JSON reader: an offset as a number; a sequence number as its decimal
        text (56 digits do not survive a reader that parses numbers as doubles)."""
        return position if self.dense else str(position)

    def from_column(self, value: int | str | None) -> int | None:
        if value is None:
            return None
        return int(value) if self.sql_type == "BIGINT" else position_from_key(value)


KAFKA_OFFSETS = PositionType("offset", "BIGINT", dense=True)
KINESIS_SEQUENCE_NUMBERS = PositionType("sequence number", "STRING", dense=False)


def position_value(value: int | str | None) -> int | None:
    """A position read from any table or document: a Kafka offset (int) or a sequence number's
    key or decimal text (str); None stays None."""
    if value is None or isinstance(value, int):
        return value
    return position_from_key(value)


def records_between(index: object, partition: int, start: int, end: int) -> int:
    """Records in positions [start, end) of ``partition``, as the log counts them
    (``index.records_between``); a log without the method is dense: end − start."""
    if end <= start:
        return 0
    counted = getattr(index, "records_between", None)
    return counted(partition, start, end) if counted is not None else end - start


def position_after(index: object, partition: int, start: int, count: int) -> int:
    """The exclusive end of ``count`` records of ``partition`` from ``start`` (the log's end of
    what it holds when it holds fewer), as the log says (``index.position_after``); a log
    without the method is dense: start + count."""
    advanced = getattr(index, "position_after", None)
    return advanced(partition, start, count) if advanced is not None else start + count


def records_read(index: object, before: Mapping[int, int], after: Mapping[int, int]) -> int:
    """Records read from positions ``before`` to ``after`` ({partition: position}), over all
    partitions of ``after`` known in ``before``."""
    return sum(records_between(index, p, before[p], end) for p, end in after.items() if p in before)
