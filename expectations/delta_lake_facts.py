"""The facts of a quality run read without Spark: deltalake opens each table's newest snapshot,
pyarrow reads only the files that can hold the checked hour's rows, numpy counts.

Same questions and answers as expectations.lake_facts.SparkLakeFacts for the same tables
(tests/integration/test_quality_checks.py and test_kinesis_quality.py hold them side by side). What is read:

- the ledger and the seals, whole, as columns (one row per step and partition, one per seal);
  of the ledger, only the rows the checked hours need become entries
  (expectations.ledger_selection);
- of events, late and quarantine, the two identity columns of the files whose statistics say
  they may hold a position inside the checked ranges (expectations.persisted_offset_index), and
  of events only those whose event times meet the ranges' (expectations.event_window);
- of events and late, source_partition and event_time of the files of the checked hours and
  their history hours (events: their event_date partitions; both: event_time statistics).
"""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from expectations.event_window import EventWindow
from expectations.gaps import GAP_ORDER, EventTimeGap
from expectations.hour_records import HourCounts
from expectations.lake_snapshot import STATS_PREFIX, LakeSnapshot, stat
from expectations.ledger_entries import HOUR_MS, LEDGER_READ_COLUMNS, LedgerEntry
from expectations.persisted_offset_index import PersistedOffsetIndex, position_keys
from expectations.persisted_offsets import ERASURES, PERSISTED_TABLES
from expectations.quality_tables import QualityTablesMissingError
from tidemark.log_position import PositionType
from tidemark.offset_coverage import OffsetRange
from tidemark.stream_config import StreamConfig


class LedgerUnreadableError(RuntimeError):
    """The ledger table exists but cannot be read: without it no range can be checked."""

    def __init__(self, stream: StreamConfig, error: Exception):
        path = stream.table_path("ledger")
        super().__init__(
            f"stream {stream.name!r}: the ledger at {path} cannot be read ({type(error).__name__}: {error}); "
            "the quality checks need it to know which offsets were read: restore the table's files or its "
            "Delta log (RESTORE to a readable version), then run the checks again"
        )
        self.path = path


class DeltaLakeFacts:
    """LakeFacts of ``stream`` from its Delta tables, Spark-free. ``skip_missing_files``: files
    the snapshot references that storage no longer has are left out (their rows count as missing)."""

    def __init__(self, stream: StreamConfig, skip_missing_files: bool = False):
        self._stream = stream
        self._lake = LakeSnapshot(stream, skip_missing_files)
        self._ledger: list[LedgerEntry] | None = None
        self._ledger_table = None  # the ledger's columns (pyarrow), read once per run
        self._event_times: tuple[frozenset[int], dict[str, np.ndarray]] | None = None

    @property
    def files_read(self) -> dict[str, int]:
        """Parquet files read so far per table (the ledger and the seals not counted)."""
        return dict(self._lake.files_read)

    def require(self) -> None:
        self._lake.require()

    def ledger(self) -> list[LedgerEntry]:
        """The ledger's entries, every row. LedgerUnreadableError naming the table when it exists
        but cannot be read (a file gone, a column missing, bytes that are not Parquet)."""
        from expectations.ledger_entries import ledger_entries

        if self._ledger is None:
            self._ledger = self._converted(lambda: ledger_entries(self._ledger_columns()))
        return list(self._ledger)

    def ledger_for_hours(self, hours_ms: list[int], stall_window: int) -> list[LedgerEntry]:
        """The ledger's entries a run of ``hours_ms`` needs (expectations.ledger_selection: its
        checks answer as on every row), converted from the columns read once per run."""
        from expectations.ledger_entries import ledger_entries
        from expectations.ledger_selection import needed_rows

        def narrowed() -> list[LedgerEntry]:
            columns = self._ledger_columns()
            rows = needed_rows(columns, hours_ms, stall_window)
            return ledger_entries(columns if rows is None else columns.take(rows))

        return self._converted(narrowed)

    def _ledger_columns(self):
        """The ledger table's LEDGER_READ_COLUMNS as a pyarrow Table, read once per run."""
        if self._ledger_table is None:
            self._ledger_table = self._lake.read_small("ledger", LEDGER_READ_COLUMNS)
        return self._ledger_table

    def _converted(self, read):
        """``read()``, its errors reading the ledger raised as LedgerUnreadableError."""
        try:
            return read()
        except QualityTablesMissingError:
            raise
        except Exception as error:  # deltalake's, pyarrow's and OS errors alike: the table is the news
            raise LedgerUnreadableError(self._stream, error) from error

    def seals(self) -> dict[int, int | None]:
        from expectations.checked_hours import seals_of

        return seals_of(self._lake.read_small("seals", ("hour", "sealed_at")))

    def persisted_offsets(
        self, bounds: dict[int, OffsetRange], positions: PositionType, event_window: EventWindow | None = None
    ) -> PersistedOffsetIndex:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.dataset as ds

        wanted = {p: (positions.to_column(span.start), positions.to_column(span.end)) for p, span in bounds.items()}
        rows = None
        for partition, (low, high) in sorted(wanted.items()):
            one = (ds.field("source_partition") == partition) & (ds.field("source_offset") >= low)
            one = one & (ds.field("source_offset") < high)
            rows = one if rows is None else rows | one
        from connectors.lake_storage import is_delta_table

        tables = []
        erasures = (ERASURES,) if is_delta_table(self._stream.table_path(ERASURES)) else ()
        for index, name in enumerate(PERSISTED_TABLES + erasures):
            found = self._lake.read(
                name,
                ("source_partition", "source_offset"),
                keep_files=lambda actions, name=name: _may_hold(
                    actions, name, wanted, not positions.dense, event_window
                ),
                rows=rows,
            )
            tables.append((found, index))
        partitions = np.concatenate([t.column("source_partition").to_numpy() for t, _ in tables]).astype(np.int64)
        keys = np.concatenate(
            [
                position_keys(
                    pc.cast(t.column("source_offset"), pa.int64()).to_numpy()
                    if positions.dense
                    else t.column("source_offset").to_pylist(),
                    positions,
                )
                for t, _ in tables
            ]
        )
        sources = np.concatenate([np.full(t.num_rows, index, dtype=np.int8) for t, index in tables])
        return PersistedOffsetIndex(partitions, keys, sources, positions)

    def count_by_hour(self, hours_ms: list[int]) -> dict[tuple[int, int], HourCounts]:
        if not hours_ms:
            return {}
        times = self._times(hours_ms)
        counted: dict[tuple[int, int], list[int]] = {}
        hours = np.asarray(sorted(set(hours_ms)), dtype=np.int64)
        # One integer per (partition, hour, late): a 1-d unique is many times faster than rows'.
        keys = (times["partition"] * len(hours) + np.searchsorted(hours, times["hour"])) * 2 + times["late"]
        unique, counts = np.unique(keys, return_counts=True)
        for key, n in zip(unique.tolist(), counts.tolist()):
            partition, hour_index = divmod(key // 2, len(hours))
            counted.setdefault((partition, int(hours[hour_index])), [0, 0])[key % 2] += n
        return {key: HourCounts(events, late) for key, (events, late) in counted.items()}

    def longest_gaps(self, hours_ms: list[int]) -> dict[tuple[int, int], EventTimeGap]:
        if not hours_ms:
            return {}
        times = self._times(hours_ms)
        order = np.lexsort((times["t"], times["hour"], times["partition"]))
        partition, hour, t = times["partition"][order], times["hour"][order], times["t"][order]
        # Every span between consecutive times of one (partition, hour), as the gap's fields.
        same = (partition[1:] == partition[:-1]) & (hour[1:] == hour[:-1])
        partition, hour = partition[:-1][same], hour[:-1][same]
        spans = {"length_ms": (t[1:] - t[:-1])[same], "after_ms": t[:-1][same], "before_ms": t[1:][same]}
        if not len(partition):
            return {}
        # Each (partition, hour)'s largest gap by EventTimeGap's order: the last of a lexsort by it.
        ranked = np.lexsort((*(spans[name] for name in reversed(GAP_ORDER)), hour, partition))
        p, h = partition[ranked], hour[ranked]
        last = ranked[np.r_[(p[1:] != p[:-1]) | (h[1:] != h[:-1]), True]]
        return {
            (int(partition[at]), int(hour[at])): EventTimeGap(
                **{name: int(values[at]) for name, values in spans.items()}
            )
            for at in last
        }

    def _times(self, hours_ms: list[int]) -> dict[str, np.ndarray]:
        """source_partition, event time (ms), its hour and a late flag of every events and late row
        whose event time falls in one of ``hours_ms``; read once per run for the widest ask."""
        wanted = frozenset(hours_ms)
        if self._event_times is None or not wanted <= self._event_times[0]:
            self._event_times = (wanted, self._read_times(sorted(wanted)))
        read_for, times = self._event_times
        if wanted == read_for:
            return times
        keep = np.isin(times["hour"], sorted(wanted))
        return {name: values[keep] for name, values in times.items()}

    def _read_times(self, hours_ms: list[int]) -> dict[str, np.ndarray]:
        import pyarrow as pa
        import pyarrow.compute as pc

        dates = {datetime.fromtimestamp(h / 1000, UTC).date() for h in hours_ms}
        parts = []
        for late, name in enumerate(("events", "late")):
            found = self._lake.read(
                name,
                ("source_partition", "event_time"),
                keep_files=lambda actions, partitioned=(name == "events"): _may_hold_hours(
                    actions, hours_ms, dates if partitioned else None
                ),
            )
            found = found.filter(pc.is_valid(found.column("event_time")))
            micros = pc.cast(pc.cast(found.column("event_time"), pa.timestamp("us", tz="UTC")), pa.int64()).to_numpy()
            t = micros // 1000
            hour = (t // HOUR_MS) * HOUR_MS
            keep = np.isin(hour, hours_ms)
            parts.append(
                {
                    "partition": found.column("source_partition").to_numpy().astype(np.int64)[keep],
                    "t": t[keep],
                    "hour": hour[keep],
                    "late": np.full(int(keep.sum()), late, dtype=np.int64),
                }
            )
        return {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}


def _may_hold(actions, table: str, wanted: dict, text: bool, event_window: EventWindow | None):
    """Files of ``table`` that may hold a wanted position: by the position statistics, and for
    events also by the event-time window. A compacted hour's file holds every partition, so its
    position statistics span from the slowest partition's offsets to the fastest's and keep it
    for any range; its event times keep only the hours the ranges' records lie in."""
    import pyarrow.compute as pc

    keep = _may_hold_positions(actions, wanted, text)
    if table != "events" or event_window is None:
        return keep
    return pc.and_(keep, _may_hold_times(actions, event_window))


def _may_hold_times(actions, window: EventWindow):
    """Files whose event_time statistics meet ``window`` (ms, inclusive); a file without them is kept.
    Timestamp statistics are truncated to the millisecond: max + 1 ms bounds."""
    import pyarrow as pa
    import pyarrow.compute as pc

    lows, highs = stat(actions, "min", "event_time"), stat(actions, "max", "event_time")
    if lows is None or highs is None:
        return pa.array([True] * actions.num_rows, type=pa.bool_())

    def millis(column):
        return pc.divide(pc.cast(pc.cast(column, pa.timestamp("us", tz="UTC")), pa.int64()), 1000)

    meets = pc.and_(pc.less_equal(millis(lows), window.last_ms), pc.greater_equal(millis(highs), window.first_ms - 1))
    return pc.fill_null(meets, True)


def _may_hold_positions(actions, wanted: dict, text: bool):
    """Files whose statistics allow a row of some partition p with a position in [low, high)."""
    import pyarrow as pa

    n = actions.num_rows
    p_min, p_max = (_values(stat(actions, kind, "source_partition"), n) for kind in ("min", "max"))
    o_min, o_max = (_values(stat(actions, kind, "source_offset"), n) for kind in ("min", "max"))
    keep = []
    for i in range(n):
        keep.append(
            any(
                _between(p_min[i], p_max[i], partition, partition + 1)
                and (_text_between if text else _between)(o_min[i], o_max[i], low, high)
                for partition, (low, high) in wanted.items()
            )
        )
    return pa.array(keep, type=pa.bool_())


def _may_hold_hours(actions, hours_ms: list[int], dates):
    """Files whose event_date partition (when ``dates``) and event_time statistics allow a row
    in one of the hours. Timestamp statistics are truncated to the millisecond: max + 1 ms bounds."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = actions.num_rows
    by_date = (
        [True] * n
        if dates is None or "partition.event_date" not in actions.column_names
        else [d is None or d in dates for d in actions.column("partition.event_date").to_pylist()]
    )
    lows, highs = stat(actions, "min", "event_time"), stat(actions, "max", "event_time")
    if lows is None or highs is None:
        return pa.array(by_date, type=pa.bool_())

    def millis(column) -> list:
        micros = pc.cast(pc.cast(column, pa.timestamp("us", tz="UTC")), pa.int64()).to_pylist()
        return [None if v is None else v // 1000 for v in micros]

    low_ms, high_ms = millis(lows), millis(highs)
    keep = [
        by_date[i]
        and (
            low_ms[i] is None
            or high_ms[i] is None
            or any(low_ms[i] < h + HOUR_MS and high_ms[i] + 1 > h for h in hours_ms)
        )
        for i in range(n)
    ]
    return pa.array(keep, type=pa.bool_())


def _values(column, n: int) -> list:
    """A statistics column as Python values; None for every file when no file recorded it."""
    return [None] * n if column is None else column.to_pylist()


def _between(low, high, start, end) -> bool:
    """[low, high] (a file's statistics; unknown: None) may meet [start, end)."""
    if low is None or high is None:
        return True
    return low < end and high >= start


def _text_between(low, high, start: str, end: str) -> bool:
    """As _between for text statistics, which may keep a prefix only. A truncated minimum is still
    at most the file's lowest value, so it compares whole; a truncated maximum may be below the
    file's highest value, so only its prefix bounds anything."""
    if low is None or high is None:
        return True
    return not (high[:STATS_PREFIX] < start[:STATS_PREFIX] or low >= end)
