"""What ``tidemark demo --incident`` did and measured, as one typed value (its JSON file is what a
test or a person reads back; the screen says the same in sentences).

Offsets are the frozen partition's; times are ms since the epoch, UTC; seconds are wall time.
"""

from __future__ import annotations

import msgspec


class IncidentStep(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One step as the screen showed it: its name and how long it took."""

    name: str
    seconds: float


class QualityVerdict(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One quality run the incident triggered: the frozen partition's status and reasons, and the
    statuses of every partition it reported (partition → status)."""

    run_id: str
    status: str
    reasons: tuple[str, ...]
    statuses: dict[int, str]
    position: int | None
    log_end: int | None


class ReplayFigure(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One recover DAG run of the frozen partition: the ranges it was asked for ([start, end),
    offsets) and the records its own commits inserted."""

    run_id: str
    ranges: tuple[tuple[int, int], ...]
    inserted: int


class IncidentReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The whole incident. ``frozen_position``: the partition's read position while frozen;
    ``unread_end``: the furthest log end a recovery was asked to replay to, so the unread range is
    [frozen_position, unread_end). ``replayed``: records the recoveries inserted, summed.
    ``lake_rows``/``lake_offsets``: the partition's rows in events, late and quarantine (where each
    record of the log goes) and their distinct offsets, at the end; ``log_records``: the offsets
    its log holds (each a record: the demo's producers write no transactions). ``alarms``: the alarms the inbox
    received during the incident (their JSON, as received)."""

    stream: str
    partition: int
    stall_timeout_ms: int
    verdicts: tuple[QualityVerdict, ...]
    replays: tuple[ReplayFigure, ...]
    frozen_position: int | None
    unread_end: int | None
    replayed: int
    lake_rows: int
    lake_offsets: int
    log_records: int
    global_watermark_decreased: bool
    alarms: tuple[dict, ...]
    steps: tuple[IncidentStep, ...]

    def encode(self) -> bytes:
        return msgspec.json.encode(self)

    @staticmethod
    def decode(data: bytes | str) -> IncidentReport:
        return msgspec.json.decode(data, type=IncidentReport)
