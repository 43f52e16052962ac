"""What a quality run asks of the lake, and the Spark implementation that answers it.

A run computes small facts (the ledger, the seals, per-range counts of persisted offsets,
per-hour counts, the longest event-time gaps of an hour) and hands them to Great Expectations.
Two implementations answer the same questions with the same values:

- expectations.delta_lake_facts.DeltaLakeFacts, without Spark (deltalake + pyarrow, one hour's
  files read): the regular run, per sealed hour or with no hour at all;
- SparkLakeFacts, below: the sweep, which checks every hour the source log retains and so scans
  a large part of the events table, the one read that wants a cluster.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Protocol

from expectations.event_window import EventWindow
from expectations.gaps import EventTimeGap
from expectations.hour_records import HourCounts
from expectations.ledger_entries import LedgerEntry
from expectations.persisted_offsets import ScopeCount
from tidemark.log_position import PositionType
from tidemark.offset_coverage import OffsetRange
from tidemark.stream_config import StreamConfig


class OffsetCounts(Protocol):
    """The persisted rows' positions within the checked ranges (see PersistedOffsets)."""

    def distinct_per_range(self, ranges: dict[Hashable, tuple[int, OffsetRange]]) -> dict[Hashable, int]: ...

    def count_in_spans(
        self, scopes: dict[Hashable, tuple[int, Sequence[OffsetRange]]]
    ) -> dict[Hashable, ScopeCount]: ...

    def missing_spans(self, ranges: dict[Hashable, tuple[int, OffsetRange]]) -> dict[Hashable, list[OffsetRange]]: ...

    def release(self) -> None: ...


class LakeFacts(Protocol):
    """The facts of one stream's tables a quality run needs. Times are ms since the epoch, UTC."""

    def require(self) -> None:
        """Raise QualityTablesMissingError for the first of the stream's tables that is missing."""

    def ledger(self) -> list[LedgerEntry]:
        """The ledger's rows, ordered by partition, start, end, step (read once per run)."""

    def ledger_for_hours(self, hours_ms: list[int], stall_window: int) -> list[LedgerEntry]:
        """The ledger rows a run of ``hours_ms`` needs, ordered as ``ledger()``'s: every check of
        those hours, the stall rules over ``stall_window`` rows, each partition's position and
        the accepted losses answer on them as on every row (expectations.ledger_selection). A
        reader may return every row."""

    def seals(self) -> dict[int, int | None]:
        """Sealed hour → the newest sealed_at of its rows."""

    def persisted_offsets(
        self, bounds: dict[int, OffsetRange], positions: PositionType, event_window: EventWindow | None = None
    ) -> OffsetCounts:
        """The rows of events, late and quarantine whose position lies in ``bounds`` (per partition).
        ``event_window``: the event times those rows can have (expectations.event_window), which
        a reader may use to skip events files; None: any."""

    def count_by_hour(self, hours_ms: list[int]) -> dict[tuple[int, int], HourCounts]:
        """(partition, hour) → events and late rows by event time, for the hours that have any."""

    def longest_gaps(self, hours_ms: list[int]) -> dict[tuple[int, int], EventTimeGap]:
        """(partition, hour) → the longest gap between consecutive event times within the hour."""


class SparkLakeFacts:
    """LakeFacts read with Spark (the code the checks had before they ran without it)."""

    def __init__(self, spark, stream: StreamConfig):
        from expectations.quality_tables import QualityTables

        self._spark = spark
        self._stream = stream
        self._tables = QualityTables(spark, stream)

    def read(self, table: str):
        """The table as a Spark frame."""
        return self._tables.read(table)

    def require(self) -> None:
        self._tables.require()

    def ledger(self) -> list[LedgerEntry]:
        from expectations.ledger_entries import read_ledger

        return read_ledger(self.read("ledger"))

    def ledger_for_hours(self, hours_ms: list[int], stall_window: int) -> list[LedgerEntry]:
        # The sweep reads a large part of the lake anyway; every row answers as well.
        return self.ledger()

    def seals(self) -> dict[int, int | None]:
        from expectations.checked_hours import seals_by_hour

        return seals_by_hour(self.read("seals"))

    def persisted_offsets(
        self, bounds: dict[int, OffsetRange], positions: PositionType, event_window: EventWindow | None = None
    ) -> OffsetCounts:
        # Spark prunes by the position filter's statistics itself; the window is not needed here.
        from connectors.lake_storage import is_delta_table
        from expectations.persisted_offsets import ERASURES, PersistedOffsets

        erasures = is_delta_table(self._stream.table_path(ERASURES))
        return PersistedOffsets(self._spark, self.read, bounds, positions, erasures=erasures)

    def count_by_hour(self, hours_ms: list[int]) -> dict[tuple[int, int], HourCounts]:
        from expectations.hour_records import count_by_hour

        return count_by_hour(self.read, hours_ms)

    def longest_gaps(self, hours_ms: list[int]) -> dict[tuple[int, int], EventTimeGap]:
        from expectations.gaps import longest_gaps

        return longest_gaps(self.read, hours_ms)
