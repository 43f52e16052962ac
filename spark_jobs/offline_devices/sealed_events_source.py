"""A stream's sealed events, in event-time slices: the input of tidemark's stateful jobs.

A PySpark 4.2 Python Data Source (``tidemark_sealed_events``) over the stream's lake, not over
Kafka. Hour [H, H+1h) is sealed once G >= H + 1h + allowed_lateness; from then on every record of
the hour is late, so the hour's rows in ``events`` are final (late records went to ``late``, the
same way in live runs and backfills). Hours seal in order (G never decreases), so everything before
the end of the last hour in the ``seals`` table is final: that end is the *sealed horizon*.

Each micro-batch is one slice [previous until, next until) of event time, ending on a multiple of
``slice_ms`` or at the horizon (``end_ms`` too, when set), whichever comes first. Its rows are the
slice's records, (device_id, event_time, event_time_ms), plus one *slice-end marker* row: device_id
null, event time = slice end - 1 ms. The marker is what moves a consumer's watermark to the end of
the slice even when the slice is silent (a whole fleet going quiet must still go offline), and no
further: a consumer's watermark (``withWatermark`` on event_time, delay 0) never passes the end of
the last slice read, which is <= the sealed horizon <= G. Markers carry no device; consumers skip
them.

The end offset of a batch is small JSON, checkpointed by Spark::

    {"from_ms": 1763829900000, "until_ms": 1763830800000, "horizon_ms": 1763834400000, "events_version": 412}

``from_ms`` is where the slice ending there began (for progress reports; reading takes it from
the previous offset). ``events_version`` is the version of ``events`` the slice is read at, taken after the seals were
read (events commit before their seals), so a replayed batch reads exactly the rows the first run
read, whatever was written to the table since. ``until_ms`` null: the start is not known yet (a
live run before anything was sealed).

Reading uses the ``deltalake`` package (``DeltaTable.scan``, which also reads tables with deletion
vectors), one Spark task per event hour of the slice, pruned on the partition columns event_date
and event_hour. It is imported inside the planning and reading methods, so the driver and the tests
import this module cheaply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated

import msgspec
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

from spark_jobs.source_spec import spec_from_options, spec_options
from tidemark.hour_sealer import HOUR_MS, hour_start_ms

SOURCE_NAME = "tidemark_sealed_events"
SCHEMA = "device_id STRING, event_time TIMESTAMP, event_time_ms BIGINT"

_COLUMN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


_Milliseconds = Annotated[int, msgspec.Meta(ge=0)]


class SealedEventsOptions(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The source's options, one typed value: the ``spec`` option (spark_jobs.source_spec),
    decoded once when the query builds its reader, failing then with the bad field named.

    ``slice_ms`` is the length of a slice (ms). ``start_ms`` is where a query without a checkpoint
    starts (ms since the epoch, UTC); without it (live), at the first event hour of the sealed
    part of ``events`` (or at the horizon when that part is empty). ``end_ms`` (exclusive) bounds
    a backfill; reading never passes the sealed horizon either.
    """

    events_path: str
    seals_path: str
    device_field: str
    slice_ms: Annotated[int, msgspec.Meta(ge=1)]
    start_ms: _Milliseconds | None = None
    end_ms: _Milliseconds | None = None

    def __post_init__(self):
        for required in ("events_path", "seals_path"):
            if not getattr(self, required):
                raise ValueError(f"Option '{required}' is required.")
        if not _COLUMN_NAME.match(self.device_field):
            raise ValueError(
                f"Option 'device_field' must be a column name (letters, digits, '_'), got {self.device_field!r}."
            )
        if self.start_ms is not None and self.end_ms is not None and self.end_ms <= self.start_ms:
            raise ValueError(f"Option 'end_ms' ({self.end_ms}) must be after 'start_ms' ({self.start_ms}).")

    def to_options(self) -> dict[str, str]:
        """Spark's options for this value: ``.options(**options.to_options())``."""
        return spec_options(self)

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> SealedEventsOptions:
        """The value ``to_options`` wrote; ValueError naming the bad field."""
        return spec_from_options(options, cls, SOURCE_NAME)


@dataclass(frozen=True)
class SliceOffset:
    """A position in event time: everything before ``until_ms`` has been read."""

    until_ms: int | None
    horizon_ms: int | None = None
    events_version: int | None = None
    from_ms: int | None = None

    def to_offset(self) -> dict:
        return {
            "from_ms": self.from_ms,
            "until_ms": self.until_ms,
            "horizon_ms": self.horizon_ms,
            "events_version": self.events_version,
        }

    @classmethod
    def from_offset(cls, offset: dict | str) -> SliceOffset:
        data = json.loads(offset) if isinstance(offset, str) else offset
        if "until_ms" not in data:
            raise ValueError(
                f"the checkpoint holds offset {data!r}, not one of {SOURCE_NAME}: use a new checkpoint location"
            )
        return cls(data["until_ms"], data.get("horizon_ms"), data.get("events_version"), data.get("from_ms"))


@dataclass(frozen=True)
class HourRead(InputPartition):
    """One Spark task: the records of ``events`` (at ``events_version``) in [from_ms, until_ms),
    all within the event hour starting at ``hour_ms``; ``marker_ms`` set: also yield the slice-end
    marker at that time (the task of the slice's last hour does)."""

    events_path: str
    events_version: int | None
    device_field: str
    hour_ms: int
    from_ms: int
    until_ms: int
    marker_ms: int | None


class SealedEventsSource(DataSource):
    """Factory registered as ``tidemark_sealed_events``."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema) -> SealedEventsReader:
        return SealedEventsReader(SealedEventsOptions.from_options(self.options))


class SealedEventsReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans slices (in the driver, for the query's life) and reads them (pickled to the tasks).

    ``lake`` answers the two questions planning asks of the lake (see ``DeltaLakeState``); tests
    hand in a double.
    """

    def __init__(self, options: SealedEventsOptions, lake: DeltaLakeState | None = None):
        self._options = options
        self._lake = lake or DeltaLakeState(options.events_path, options.seals_path)
        # Set by prepareForTriggerAvailableNow: the horizon when the run started, never passed.
        self._available_now_horizon: int | None = None
        self._available_now = False

    # -- planning (driver) ---------------------------------------------------------------------
    def initialOffset(self) -> dict:
        start = self._options.start_ms if self._options.start_ms is not None else self._live_start()
        return SliceOffset(start).to_offset()

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = True
        self._available_now_horizon = self._horizon()

    def latestOffset(self, start: dict, limit=None) -> dict:
        """The next slice's end; ``start`` itself when there is nothing sealed to read. Read limits
        do not apply: a slice is an event-time rule (the slice length), not a row budget."""
        previous = SliceOffset.from_offset(start)
        if previous.until_ms is None:
            # A live run that began before anything was sealed: position it first (an empty
            # batch), then read slices from there.
            begin = self._live_start()
            return start if begin is None else SliceOffset(begin, self._horizon()).to_offset()
        horizon = self._available_now_horizon if self._available_now else self._horizon()
        if horizon is None or previous.until_ms >= horizon:
            return start
        slice_ms = self._options.slice_ms
        until = min((previous.until_ms // slice_ms + 1) * slice_ms, horizon)
        # Seals first, then the events version: the version holds every row of the sealed hours.
        return SliceOffset(until, horizon, self._lake.events_version(), previous.until_ms).to_offset()

    def _horizon(self) -> int | None:
        """End of the last sealed hour, capped at ``end_ms``; None while nothing is sealed."""
        last_sealed = self._lake.last_sealed_hour_ms()
        if last_sealed is None:
            return None
        horizon = last_sealed + HOUR_MS
        return horizon if self._options.end_ms is None else min(horizon, self._options.end_ms)

    def _live_start(self) -> int | None:
        """The first event hour of the sealed part of ``events``, or the horizon when that part is
        empty; None while nothing is sealed. Hours before it are sealed and hold no records, so none
        can appear there later."""
        horizon = self._horizon()
        if horizon is None:
            return None
        first = self._lake.first_event_hour_ms()
        return horizon if first is None else min(first, horizon)

    def partitions(self, start: dict, end: dict) -> list[HourRead]:
        begin, finish = SliceOffset.from_offset(start), SliceOffset.from_offset(end)
        if begin.until_ms is None or finish.until_ms is None or finish.until_ms <= begin.until_ms:
            return []
        hours = range(hour_start_ms(begin.until_ms), finish.until_ms, HOUR_MS)
        return [
            HourRead(
                self._options.events_path,
                finish.events_version,
                self._options.device_field,
                hour,
                max(begin.until_ms, hour),
                min(finish.until_ms, hour + HOUR_MS),
                finish.until_ms - 1 if hour == hours[-1] else None,
            )
            for hour in hours
        ]

    def commit(self, end: dict) -> None:
        """Nothing to commit: the lake is read, never consumed."""

    # -- reading (tasks) -----------------------------------------------------------------------
    def read(self, partition: HourRead) -> Iterator:
        import pyarrow as pa

        schema = _arrow_schema(pa)
        if partition.events_version is not None:
            records = read_hour_records(partition)
            if records.num_rows:
                yield from records.cast(schema).to_batches()
        if partition.marker_ms is not None:
            yield pa.RecordBatch.from_arrays(
                [
                    pa.nulls(1, pa.string()),
                    pa.array([partition.marker_ms * 1000], pa.timestamp("us", tz="UTC")),
                    pa.array([partition.marker_ms], pa.int64()),
                ],
                schema=schema,
            )

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_lake"] = None  # planning only; the tasks read through their HourRead
        return state


def read_hour_records(partition: HourRead):
    """The records of ``partition`` as an Arrow table (device_id, event_time, event_time_ms),
    sorted by device and time, so the same read gives the same rows in the same order."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from connectors.lake_storage import open_delta_table

    hour_text = _utc_date(partition.hour_ms)
    hour = (partition.hour_ms % 86_400_000) // HOUR_MS
    device = f'"{partition.device_field}"'
    predicate = (
        f"event_date = DATE '{hour_text}' AND event_hour = {hour}"
        f" AND event_time >= to_timestamp_millis({partition.from_ms})"
        f" AND event_time < to_timestamp_millis({partition.until_ms})"
        f" AND {device} IS NOT NULL"
    )
    table = open_delta_table(partition.events_path, version=partition.events_version)
    read = pa.table(table.scan(columns=[partition.device_field, "event_time"], predicate=predicate))
    devices = read.column(partition.device_field).cast(pa.string())
    times = read.column("event_time").cast(pa.timestamp("us", tz="UTC"))
    millis = pc.divide(times.cast(pa.int64()), 1000)  # µs since the epoch → ms (floor for times after 1970)
    records = pa.table({"device_id": devices, "event_time": times, "event_time_ms": millis})
    return records.sort_by([("device_id", "ascending"), ("event_time_ms", "ascending")])


def _utc_date(epoch_ms: int) -> str:
    import time

    return time.strftime("%Y-%m-%d", time.gmtime(epoch_ms // 1000))


def _arrow_schema(pa):
    return pa.schema(
        [("device_id", pa.string()), ("event_time", pa.timestamp("us", tz="UTC")), ("event_time_ms", pa.int64())]
    )


class DeltaLakeState:
    """What planning needs to know of the lake: the last sealed hour, the first event hour, the
    events table's version. Reads the Delta logs with ``deltalake`` (no Spark job)."""

    def __init__(self, events_path: str, seals_path: str):
        self._events_path = events_path
        self._seals_path = seals_path

    def last_sealed_hour_ms(self) -> int | None:
        import pyarrow as pa
        import pyarrow.compute as pc

        from connectors.lake_storage import is_delta_table, open_delta_table

        if not is_delta_table(self._seals_path):
            return None
        hours = pa.table(open_delta_table(self._seals_path).scan(columns=["hour"])).column("hour")
        last = pc.max(hours.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())).as_py()
        return None if last is None else last // 1000

    def first_event_hour_ms(self) -> int | None:
        from datetime import date

        from connectors.lake_storage import is_delta_table, open_delta_table

        if not is_delta_table(self._events_path):
            return None
        hours = [
            (date.fromisoformat(p["event_date"]).toordinal() - _EPOCH_ORDINAL) * 86_400_000
            + int(p["event_hour"]) * HOUR_MS
            for p in open_delta_table(self._events_path).partitions()
            if p.get("event_date") and p.get("event_hour") is not None
        ]
        return min(hours, default=None)

    def events_version(self) -> int | None:
        from connectors.lake_storage import is_delta_table, open_delta_table

        if not is_delta_table(self._events_path):
            return None
        return open_delta_table(self._events_path).version()


_EPOCH_ORDINAL = 719163  # date(1970, 1, 1).toordinal()
