"""Positions that left the log before they were read: retention overtook the reader.

A partition read up to ``position`` (the next position to read) whose log now starts at
``earliest`` > position has lost [position, earliest) for good: retention (or a Kafka
DeleteRecords) removed them unread. The rule of every tidemark job: such a range is never
skipped silently. The job stops before it plans anything past it, naming the partition and the
exact positions, and every later run stops the same way (its position has not moved), so the
quality run's retention check keeps reporting the range as LOST.

Positions, not records: a Kafka range may have held transaction markers or aborted records (the
count of offsets is exact, the count of data records unknowable now); Kinesis sequence numbers
are sparse, so how many records a lost range held is unknown, possibly none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tidemark.log_connection import LogConnection


class RetentionLossError(RuntimeError):
    """Positions tidemark must read are no longer in the log: they fell out of retention.

    ``lost``: the exact ranges (LostRange) when they are known."""

    def __init__(self, message: str, lost: tuple = ()):
        super().__init__(message)
        self.lost = lost


@dataclass(frozen=True, order=True)
class LostRange:
    """Positions [start, end) of ``partition`` left the log unread. ``end``: the first position
    still retained; None when nothing after ``start`` is (a Kinesis shard that retains no record
    after it, or one no longer listed at all)."""

    partition: int
    start: int
    end: int | None

    def describe(self, log: LogConnection) -> str:
        """The range in the log's words: ``partition 1: offsets [40, 70) (30 offsets)``."""
        words = log.position_type.name + "s"
        end = "the shard's end" if self.end is None else str(self.end)
        count = f" ({self.end - self.start} {words})" if log.position_type.dense and self.end is not None else ""
        return f"{log.partition_words(self.partition)}: {words} [{self.start}, {end}){count}"

    def to_json(self) -> dict:
        """For log lines: positions as text (a 56-digit sequence number does not survive a JSON
        reader that parses numbers as doubles)."""
        return {
            "partition": self.partition,
            "start": str(self.start),
            "end": None if self.end is None else str(self.end),
        }


def lost_ranges(positions: Mapping[int, int], earliest: Mapping[int, int]) -> tuple[LostRange, ...]:
    """The ranges lost to retention in a log whose earliest retained position is known per
    partition: for each partition with one above its read position, [position, earliest). By partition."""
    return tuple(
        LostRange(partition, position, earliest[partition])
        for partition, position in sorted(positions.items())
        if partition in earliest and earliest[partition] > position
    )


def retention_loss_message(log: LogConnection, lost: tuple[LostRange, ...]) -> str:
    """What a person reads when the job stops: which positions, why, and what to do."""
    ranges = "; ".join(range_.describe(log) for range_ in lost)
    sparse = (
        ""
        if log.position_type.dense
        else f" {log.position_type.name.capitalize()}s are sparse, so how many records were lost is unknown (possibly none)."
    )
    return (
        f"retention overtook the reader of {log.log_words}: {ranges} were deleted from the log before they were "
        f"read ({log.retention_words}).{sparse} The job stops here rather than skip them: nothing after them is "
        "read, every later run stops the same way, and the quality run reports them LOST. They cannot be read any "
        "more; restore them from another copy of the log if one exists. To persist the rest of the partition "
        "without them, the loss has to be accepted explicitly (see docs/operations/when-the-world-fails.md, "
        "'Retention overtakes the live job')"
    )
