"""A partition held by an open transaction: what a read_committed reader cannot see yet.

Under read_committed a Kafka reader reads up to the partition's last stable offset (LSO), the
first offset of the oldest transaction still open. While a producer's transaction is open, the
offsets from the LSO to the written end (the high watermark) wait. That is normal for seconds or
minutes. A producer that died inside a transaction holds the partition until the broker's
transaction timeout aborts it, and a hanging transaction holds it for good. From the outside
that looks like silence: no error, nothing to read.

So the planner tracks, per partition, since when the LSO has stood still below the written end.
Once that lasts longer than ``open_transaction_timeout``, the partition is *held by an open
transaction*: the job logs it, naming the partition, and the ledger says so. When the LSO moves,
the clock starts again. Nothing is skipped: the held records are read once they are committed,
and never if they are aborted.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class OpenTransaction:
    """The readable end of a partition stands at ``stable_offset`` below ``written_end``.

    ``since_ms`` is when the planner first saw it standing there (ms, UTC); ``held`` is True
    once that is longer ago than the stream's open_transaction_timeout. Two observations are the
    same hold whatever was written behind it meanwhile: ``written_end`` does not take part in
    equality, so a transaction that keeps writing does not plan a batch per trigger.
    """

    stable_offset: int
    written_end: int = field(compare=False)
    since_ms: int
    held: bool

    def to_json(self) -> dict:
        return {
            "stable_offset": self.stable_offset,
            "written_end": self.written_end,
            "since_ms": self.since_ms,
            "held": self.held,
        }

    @classmethod
    def from_json(cls, data: dict | None) -> OpenTransaction | None:
        if data is None:
            return None
        return cls(data["stable_offset"], data["written_end"], data["since_ms"], data["held"])


def track_open_transaction(
    previous: OpenTransaction | None,
    stable_offset: int,
    written_end: int,
    now_ms: int,
    timeout_ms: int,
) -> OpenTransaction | None:
    """The partition's open transaction after looking at the log now; None when nothing is open.

    ``stable_offset`` is the offset a read_committed reader can read up to (Kafka's LSO, never
    capped by an available_now run), ``written_end`` the offset the next record gets (the high
    watermark). Worst case, a held partition is reported ``timeout_ms`` plus one planning
    interval after its LSO stopped moving.
    """
    if stable_offset >= written_end:
        return None
    if previous is not None and previous.stable_offset == stable_offset:
        since_ms = previous.since_ms
    else:
        since_ms = now_ms
    return OpenTransaction(stable_offset, written_end, since_ms, now_ms - since_ms >= timeout_ms)
