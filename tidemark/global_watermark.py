"""The stream's global watermark G: the minimum partition watermark over ACTIVE partitions.

Contract: G = max(G_previous, min of W_p over ACTIVE partitions). G never decreases, also across
restarts (the caller restores it from the checkpointed offsets). Times in ms since the epoch, UTC.

- An ACTIVE partition with unread records and no watermark yet holds G where it is: nothing is
  known of those records' event times (a consumer that cannot read the partition, or a log whose
  timestamps are not event times, so the time index proves nothing), and G passing them would
  send them to ``late`` once read. This is Flink's rule (a split's watermark starts at
  Long.MIN_VALUE until idleness releases it), limited to what could be late: the hold lasts only
  while the records stay unread.
- An ACTIVE partition with nothing to read and no watermark is left out: it never admitted a
  valid record, so no record of it can be passed by G. If it produces, it holds G from the plan
  that sees its records.
- An IDLE or FINISHED partition is left out (FINISHED: a closed shard read to its end). A partition that never had data is IDLE from the start (it has
  never produced), so it never holds G: the FLINK-29099 deadlock cannot happen.
- If no partition is ACTIVE, G takes the final watermarks of the partitions that turned IDLE in
  this very update (``just_read``: their W_p was just raised by their last batch's records), then
  holds. The plan that finds a partition caught up and quiet is the one that learns its final
  W_p: without this, a backlog whose last records are older than idle_timeout left its last
  hours unsealed until new records arrived. (While some partition is ACTIVE, an idle one is left
  out as always: G may pass it, which is what idleness allows.)
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from tidemark.partition_status import PartitionStatus


class GlobalWatermark:
    def __init__(self, current_ms: int | None = None):
        self._current_ms = current_ms

    @property
    def current_ms(self) -> int | None:
        return self._current_ms

    def update(
        self,
        partition_watermarks: Mapping[int, int | None],
        statuses: Mapping[int, PartitionStatus],
        unread: Collection[int] = (),
        just_read: Collection[int] = (),
    ) -> int | None:
        """Fold in the partitions' current watermarks and statuses; returns the new G.

        ``unread``: the partitions with unread records. ``just_read``: the partitions whose W_p
        was just raised by the records of their last batch."""
        active = []
        for p, status in statuses.items():
            if status != PartitionStatus.ACTIVE:
                continue
            watermark = partition_watermarks.get(p)
            if watermark is not None:
                active.append(watermark)
            elif p in unread:
                return self._current_ms  # records of unknown event time ahead: G holds
        if not active:
            # Every partition IDLE: the final W_p of those that have just turned IDLE, then hold.
            active = [partition_watermarks[p] for p in just_read if partition_watermarks.get(p) is not None]
        if not active:
            return self._current_ms
        candidate = min(active)
        if self._current_ms is None or candidate > self._current_ms:
            self._current_ms = candidate
        return self._current_ms
