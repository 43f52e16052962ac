"""A partition's quality status, and which status wins when several checks speak.

Ordered from harmless to worst; the worst status any check gives a partition is its status:

    OK < WARN < LAGGING < STALL < STOP < HOLE < LOST

- OK: every check passed.
- WARN: the reader is alive but its lag grew across the whole stall window; or a check that is
  not about coverage failed (duplicate rows, too many late or quarantined records, a silent hour,
  an event-time gap, a ledger that counts fewer records than were persisted). The failing check
  is named in the partition's ``failed_checks`` and its reasons.
- LAGGING: the partition watermark W_p is behind G by more than max_partition_lag.
- STALL: the read position stood still across the stall window with records unread.
- STOP: the read position has not moved for stall_timeout while the log grew (or the job wrote
  nothing for that long): nothing is being persisted, and retention is counting down.
- HOLE: records the log still holds are missing from the lake (a persisted range with fewer
  rows than data records, or offsets no range read). Recovery can still replay them.
- LOST: records are missing from the lake and gone from the log (below its earliest retained
  offset). Nothing can replay them; a person must be told.

Coverage failures rank above reading failures: a HOLE is wrong data in sealed hours now, while
a STOP is data not persisted yet (still in the log); LOST ranks last because it is final.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum


class QualityStatus(str, Enum):
    OK = "OK"
    WARN = "WARN"
    LAGGING = "LAGGING"
    STALL = "STALL"
    STOP = "STOP"
    HOLE = "HOLE"
    LOST = "LOST"

    @property
    def severity(self) -> int:
        """0 for OK up to 6 for LOST: the position in STATUS_ORDER."""
        return STATUS_ORDER.index(self)


STATUS_ORDER: tuple[QualityStatus, ...] = tuple(QualityStatus)


def worst(statuses: Iterable[QualityStatus]) -> QualityStatus:
    """The worst of ``statuses``; OK when there are none."""
    return max(statuses, key=lambda status: status.severity, default=QualityStatus.OK)
