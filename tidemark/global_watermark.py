"""The stream's global watermark G: the minimum partition watermark over ACTIVE partitions.

Contract: G = max(G_previous, min of W_p over ACTIVE partitions). G never decreases, also across
restarts (the caller restores it from the checkpointed offsets). If every partition is IDLE, G
holds. An ACTIVE partition with no watermark yet has never had a record (the planner gives a
partition with unread records a watermark from its next record first), so it is left out; if its
first records arrive behind G they are read and routed as late, G does not move back.
"""

from __future__ import annotations

from typing import Mapping

from tidemark.partition_status import PartitionStatus


class GlobalWatermark:
    def __init__(self, current_ms: int | None = None):
        self._current_ms = current_ms

    @property
    def current_ms(self) -> int | None:
        return self._current_ms

    def update(
        self, partition_watermarks: Mapping[int, int | None], statuses: Mapping[int, PartitionStatus]
    ) -> int | None:
        """Fold in the partitions' current watermarks and statuses; returns the new G."""
        active = [
            partition_watermarks[p]
            for p, status in statuses.items()
            if status == PartitionStatus.ACTIVE and partition_watermarks.get(p) is not None
        ]
        if not active:
            return self._current_ms
        candidate = min(active)
        if self._current_ms is None or candidate > self._current_ms:
            self._current_ms = candidate
        return self._current_ms
