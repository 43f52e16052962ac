"""Offsets that left the log before they were read: retention overtook the reader.

A partition read up to ``position`` (the next offset to read) whose log now starts at
``earliest`` > position has lost offsets [position, earliest) for good: retention (or a
DeleteRecords) removed them unread. The rule of every tidemark job: such a range is never
skipped silently. The job stops before it plans anything past it, naming the partition and the
exact offsets, and every later run stops the same way (its position has not moved), so the
quality run's retention check keeps reporting the range as LOST (position < earliest retained).

Offsets, not records: a lost range may have held transaction markers or aborted records; the
count of offsets is exact, the count of data records in it is unknowable now.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class LostOffsets:
    """Offsets [start, end) of ``partition`` left the log unread (end: its earliest retained offset)."""

    partition: int
    start: int
    end: int

    @property
    def offsets(self) -> int:
        return self.end - self.start

    def describe(self) -> str:
        return f"partition {self.partition}: offsets [{self.start}, {self.end}) ({self.offsets} offsets)"

    def to_json(self) -> dict:
        return {"partition": self.partition, "start_offset": self.start, "end_offset": self.end}


def lost_offsets(positions: Mapping[int, int], earliest: Mapping[int, int]) -> tuple[LostOffsets, ...]:
    """The ranges lost to retention: for each partition with a known earliest retained offset
    above its read position, [position, earliest). By partition."""
    return tuple(
        LostOffsets(partition, position, earliest[partition])
        for partition, position in sorted(positions.items())
        if partition in earliest and earliest[partition] > position
    )


def retention_loss_message(topic: str, lost: tuple[LostOffsets, ...]) -> str:
    """What a person reads when the job stops: which offsets, why, and what to do."""
    ranges = "; ".join(range_.describe() for range_ in lost)
    return (
        f"retention overtook the reader of topic {topic!r}: {ranges} were deleted from the log before they were "
        "read (retention.ms/retention.bytes or a DeleteRecords call). The job stops here rather than skip them: "
        "nothing after them is read, every later run stops the same way, and the quality run reports them LOST. "
        "They cannot be read any more; restore them from another copy of the topic if one exists. To persist the "
        "rest of the partition without them, the loss has to be accepted explicitly (see docs/operations/when-the-world-fails.md, "
        "'Retention overtakes the live job')"
    )
