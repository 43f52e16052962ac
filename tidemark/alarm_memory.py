"""What a person has already been told about each partition, and what a quality run's statuses
make due now: one message when a partition enters an alarm status, one when it moves to another
alarm status, at most one reminder per ``remind_every_ms`` while it stays, and one "resolved"
when it leaves the alarm statuses.

The memory is a small typed value (msgspec) the quality DAG keeps between runs; this module only
decides, with the time given (``now_ms``, ms since the epoch, UTC): no clock, no Airflow.

Contract of ``due_notices``:
- A partition the run did not report keeps its memory unchanged and gets no notice (not checked is
  not resolved).
- A reminder is due when ``now_ms - last_sent_ms >= remind_every_ms``; ``remind_every_ms`` None:
  never. So an alarm lasting D ms sends at most ``D // remind_every_ms`` reminders.
- The memory returned is the memory *after* the notices are delivered; a caller that delivered
  none of them keeps the previous memory, and the same notices are due at the next run.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from tidemark.alert_settings import ALARM_STATUSES

RAISED, CHANGED, REMINDER, RESOLVED = "raised", "changed", "reminder", "resolved"


class PartitionAlarm(msgspec.Struct, frozen=True):
    """A partition a person has been told is in ``status``: since ``since_ms`` (the run that first
    saw this status), last told at ``last_sent_ms`` (ms, UTC)."""

    status: str
    since_ms: int
    last_sent_ms: int


class AlarmMemory(msgspec.Struct, frozen=True):
    """The partitions of one stream currently in an alarm status, as last told."""

    partitions: dict[int, PartitionAlarm] = {}

    def encode(self) -> str:
        return msgspec.json.encode(self).decode()

    @staticmethod
    def decode(text: str | None) -> AlarmMemory:
        """The memory kept as ``encode()`` wrote it; None or '' is a stream with nothing told yet."""
        return msgspec.json.decode(text, type=AlarmMemory) if text else AlarmMemory()


class AlarmNotice(msgspec.Struct, frozen=True):
    """One thing a person must hear about one partition.

    ``kind``: RAISED (entered ``status`` from a passing one), CHANGED (from ``previous_status``,
    another alarm status), REMINDER (still ``status``), RESOLVED (left ``previous_status``; ``status``
    is the passing status it is in now). ``since_ms``: when the alarm began (for RESOLVED, when
    the alarm that ends began)."""

    partition: int
    kind: str
    status: str
    previous_status: str | None
    since_ms: int


def due_notices(
    memory: AlarmMemory, statuses: Mapping[int, str], now_ms: int, remind_every_ms: int | None
) -> tuple[list[AlarmNotice], AlarmMemory]:
    """The notices ``statuses`` (partition → quality status of this run) make due at ``now_ms``,
    ordered by partition, and the memory once they are delivered (see the module's contract)."""
    notices: list[AlarmNotice] = []
    kept = dict(memory.partitions)
    for partition in sorted(statuses):
        status = statuses[partition]
        told = kept.get(partition)
        if status not in ALARM_STATUSES:
            if told is not None:
                notices.append(AlarmNotice(partition, RESOLVED, status, told.status, told.since_ms))
                del kept[partition]
            continue
        if told is None:
            notices.append(AlarmNotice(partition, RAISED, status, None, now_ms))
            kept[partition] = PartitionAlarm(status, now_ms, now_ms)
        elif told.status != status:
            notices.append(AlarmNotice(partition, CHANGED, status, told.status, now_ms))
            kept[partition] = PartitionAlarm(status, now_ms, now_ms)
        elif remind_every_ms is not None and now_ms - told.last_sent_ms >= remind_every_ms:
            notices.append(AlarmNotice(partition, REMINDER, status, status, told.since_ms))
            kept[partition] = PartitionAlarm(status, told.since_ms, now_ms)
    return notices, AlarmMemory(kept)
