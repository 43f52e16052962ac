"""The sealed-events source's planning, against a lake double: slices, the sealed horizon, the
live start, markers, availableNow, and its option errors. (Reading real tables: the integration
test of the offline-device detector.)"""

from __future__ import annotations

import json
import pickle

import pytest

from spark_jobs.offline_devices.sealed_events_source import (
    HourRead,
    SealedEventsOptions,
    SealedEventsReader,
    SliceOffset,
)

HOUR = 3_600_000
MINUTE = 60_000
DAY0 = 1_795_219_200_000  # 2026-11-21T00:00:00Z


class FakeLake:
    """The lake as planning sees it: last sealed hour, first event hour, events version."""

    def __init__(self, last_sealed_hour=None, first_event_hour=None, version=7):
        self.last_sealed_hour, self.first_event_hour, self.version = last_sealed_hour, first_event_hour, version

    def last_sealed_hour_ms(self):
        return self.last_sealed_hour

    def first_event_hour_ms(self):
        return self.first_event_hour

    def events_version(self):
        return self.version


def _reader(lake, **options) -> SealedEventsReader:
    """A reader of the options as Spark hands them over: the ``spec`` option's JSON."""
    base = {
        "events_path": "/lake/t/events",
        "seals_path": "/lake/t/seals",
        "device_field": "device_id",
        "slice_ms": 15 * MINUTE,
    }
    return SealedEventsReader(SealedEventsOptions.from_options({"spec": json.dumps({**base, **options})}), lake)


def _slices(reader: SealedEventsReader, offset: dict) -> list[tuple[int, int]]:
    ends = []
    while True:
        following = reader.latestOffset(offset, None)
        if following == offset:
            return ends
        ends.append((SliceOffset.from_offset(offset).until_ms, following["until_ms"]))
        offset = following


def test_live_starts_at_the_first_event_hour_and_reads_slices_up_to_the_sealed_horizon():
    lake = FakeLake(last_sealed_hour=DAY0 + 15 * HOUR, first_event_hour=DAY0 + 14 * HOUR)
    reader = _reader(lake, slice_ms=25 * MINUTE)
    start = reader.initialOffset()
    assert start["until_ms"] == DAY0 + 14 * HOUR
    # Slices end on multiples of the slice length since the epoch (14:15 is one: the epoch's
    # minute count then is 29921175 = 25 x 1196847), the last at the horizon (end of hour 15).
    assert (DAY0 + 14 * HOUR + 15 * MINUTE) % (25 * MINUTE) == 0
    minute = DAY0 + 14 * HOUR
    assert _slices(reader, start) == [
        (minute, minute + 15 * MINUTE),
        (minute + 15 * MINUTE, minute + 40 * MINUTE),
        (minute + 40 * MINUTE, minute + 65 * MINUTE),
        (minute + 65 * MINUTE, minute + 90 * MINUTE),
        (minute + 90 * MINUTE, minute + 115 * MINUTE),
        (minute + 115 * MINUTE, minute + 120 * MINUTE),
    ]
    end = reader.latestOffset(reader.latestOffset(start, None), None)
    assert end == {
        "from_ms": minute + 15 * MINUTE,
        "until_ms": minute + 40 * MINUTE,
        "horizon_ms": DAY0 + 16 * HOUR,
        "events_version": 7,
    }


def test_nothing_is_read_past_the_horizon_and_a_new_seal_moves_it():
    lake = FakeLake(last_sealed_hour=DAY0, first_event_hour=DAY0)
    reader = _reader(lake, slice_ms=HOUR)
    at_horizon = {"from_ms": DAY0, "until_ms": DAY0 + HOUR, "horizon_ms": DAY0 + HOUR, "events_version": 7}
    assert reader.latestOffset(at_horizon, None) is at_horizon
    lake.last_sealed_hour = DAY0 + HOUR
    assert reader.latestOffset(at_horizon, None)["until_ms"] == DAY0 + 2 * HOUR


def test_available_now_keeps_the_horizon_it_started_with():
    lake = FakeLake(last_sealed_hour=DAY0, first_event_hour=DAY0)
    reader = _reader(lake, slice_ms=HOUR)
    reader.prepareForTriggerAvailableNow()
    lake.last_sealed_hour = DAY0 + 5 * HOUR
    assert _slices(reader, reader.initialOffset()) == [(DAY0, DAY0 + HOUR)]


def test_the_start_is_the_horizon_when_the_sealed_hours_hold_no_events_and_unknown_before_any_seal():
    assert (
        _reader(FakeLake(last_sealed_hour=DAY0 + 3 * HOUR, first_event_hour=DAY0 + 9 * HOUR)).initialOffset()[
            "until_ms"
        ]
        == DAY0 + 4 * HOUR
    )
    assert (
        _reader(FakeLake(last_sealed_hour=DAY0 + 3 * HOUR, first_event_hour=None)).initialOffset()["until_ms"]
        == DAY0 + 4 * HOUR
    )
    lake = FakeLake(last_sealed_hour=None, first_event_hour=DAY0)
    reader = _reader(lake)
    unknown = reader.initialOffset()
    assert unknown["until_ms"] is None
    assert reader.latestOffset(unknown, None) is unknown
    lake.last_sealed_hour = DAY0 + HOUR
    positioned = reader.latestOffset(unknown, None)
    assert positioned["until_ms"] == DAY0
    # The positioning batch reads nothing; the next one reads the first slice.
    assert reader.partitions(unknown, positioned) == []
    assert reader.latestOffset(positioned, None)["until_ms"] == DAY0 + 15 * MINUTE


def test_a_backfill_reads_from_its_start_to_its_end_within_the_horizon():
    lake = FakeLake(last_sealed_hour=DAY0 + 20 * HOUR, first_event_hour=DAY0)
    reader = _reader(lake, start_ms=DAY0 + 13 * HOUR + 30 * MINUTE, end_ms=DAY0 + 20 * HOUR, slice_ms=6 * HOUR)
    assert _slices(reader, reader.initialOffset()) == [
        (DAY0 + 13 * HOUR + 30 * MINUTE, DAY0 + 18 * HOUR),
        (DAY0 + 18 * HOUR, DAY0 + 20 * HOUR),
    ]
    cut = _reader(
        FakeLake(last_sealed_hour=DAY0 + 15 * HOUR), start_ms=DAY0, end_ms=DAY0 + 20 * HOUR, slice_ms=6 * HOUR
    )
    assert _slices(cut, cut.initialOffset()) == [
        (DAY0, DAY0 + 6 * HOUR),
        (DAY0 + 6 * HOUR, DAY0 + 12 * HOUR),
        (DAY0 + 12 * HOUR, DAY0 + 16 * HOUR),
    ]


def test_a_slice_is_one_task_per_event_hour_and_the_last_one_carries_the_slice_end_marker():
    reader = _reader(FakeLake())
    start = {"until_ms": DAY0 + 13 * HOUR + 30 * MINUTE}
    end = {
        "from_ms": DAY0 + 13 * HOUR + 30 * MINUTE,
        "until_ms": DAY0 + 15 * HOUR + 10 * MINUTE,
        "horizon_ms": DAY0 + 16 * HOUR,
        "events_version": 3,
    }
    common = ("/lake/t/events", 3, "device_id")
    assert reader.partitions(start, end) == [
        HourRead(*common, DAY0 + 13 * HOUR, DAY0 + 13 * HOUR + 30 * MINUTE, DAY0 + 14 * HOUR, None),
        HourRead(*common, DAY0 + 14 * HOUR, DAY0 + 14 * HOUR, DAY0 + 15 * HOUR, None),
        HourRead(
            *common,
            DAY0 + 15 * HOUR,
            DAY0 + 15 * HOUR,
            DAY0 + 15 * HOUR + 10 * MINUTE,
            DAY0 + 15 * HOUR + 10 * MINUTE - 1,
        ),
    ]
    # Partitions and the reader travel to the tasks; the lake double (planning only) does not.
    assert pickle.loads(pickle.dumps(reader.partitions(start, end)[0])).hour_ms == DAY0 + 13 * HOUR
    assert pickle.loads(pickle.dumps(reader))._lake is None


def test_reading_a_slice_without_an_events_table_yields_only_its_marker():
    reader = _reader(FakeLake())
    batches = list(reader.read(HourRead("/nowhere", None, "device_id", DAY0, DAY0, DAY0 + HOUR, DAY0 + HOUR - 1)))
    assert [batch.to_pylist() for batch in batches] == [
        [{"device_id": None, "event_time": batches[0].column(1)[0].as_py(), "event_time_ms": DAY0 + HOUR - 1}]
    ]
    assert batches[0].column(1)[0].value == (DAY0 + HOUR - 1) * 1000  # µs


@pytest.mark.parametrize(
    "options, message",
    [
        ({"events_path": ""}, "Option 'events_path' is required."),
        ({"slice_ms": 0}, "Expected `int` >= 1 - at `$.slice_ms`"),
        ({"slice_ms": "15m"}, "Expected `int`, got `str` - at `$.slice_ms`"),
        ({"start_ms": -5}, "Expected `int` >= 0 - at `$.start_ms`"),
        ({"device_field": "device id"}, "Option 'device_field' must be a column name"),
        ({"start_ms": 100, "end_ms": 100}, "Option 'end_ms' (100) must be after 'start_ms' (100)."),
    ],
)
def test_a_bad_option_fails_naming_it(options, message):
    with pytest.raises(ValueError) as error:
        _reader(FakeLake(), **options)
    assert message in str(error.value)


def test_options_survive_the_round_trip_through_the_spec_option():
    options = SealedEventsOptions("/e", "/s", "device_id", 900_000, start_ms=5, end_ms=10)
    assert list(options.to_options()) == ["spec"]
    assert SealedEventsOptions.from_options(options.to_options()) == options
    with pytest.raises(ValueError, match="not one of tidemark_sealed_events"):
        SliceOffset.from_offset('{"topic": "telemetry"}')


def _write_events(path, rows: list[tuple[str | None, int]], mode: str = "append") -> None:
    """An events-like Delta table (written with deltalake, as delta-spark's layout: partitioned by
    event_date, event_hour): rows of (device_id, event time ms)."""
    from datetime import date

    import pyarrow as pa
    from deltalake import write_deltalake

    table = pa.table(
        {
            "device_id": pa.array([d for d, _ in rows], pa.string()),
            "event_time": pa.array([t * 1000 for _, t in rows], pa.timestamp("us", tz="UTC")),
            "event_date": pa.array([date.fromordinal(719163 + t // 86_400_000) for _, t in rows], pa.date32()),
            "event_hour": pa.array([(t % 86_400_000) // HOUR for _, t in rows], pa.int32()),
        }
    )
    write_deltalake(str(path), table, mode=mode, partition_by=["event_date", "event_hour"])


def test_reading_an_hour_returns_its_records_in_the_slice_sorted_at_the_planned_version(tmp_path):
    from spark_jobs.offline_devices.sealed_events_source import DeltaLakeState

    events = tmp_path / "events"
    h14 = DAY0 + 14 * HOUR
    _write_events(
        events,
        [
            ("b", h14 + 5 * MINUTE),
            ("a", h14 + 50 * MINUTE),
            ("a", h14 + 5 * MINUTE),
            (None, h14 + 6 * MINUTE),
            ("a", h14 - 1),
            ("c", h14 + HOUR),
        ],
    )
    lake = DeltaLakeState(str(events), str(tmp_path / "no-seals"))
    version = lake.events_version()
    assert (lake.first_event_hour_ms(), lake.last_sealed_hour_ms()) == (DAY0 + 13 * HOUR, None)
    # A later commit adds a record to the same hour: a replay at the planned version does not see it.
    _write_events(events, [("d", h14 + 10 * MINUTE)])

    reader = _reader(FakeLake())
    part = HourRead(str(events), version, "device_id", h14, h14, h14 + 45 * MINUTE, h14 + 45 * MINUTE - 1)
    rows = [row for batch in reader.read(part) for row in batch.to_pylist()]
    assert [(r["device_id"], r["event_time_ms"]) for r in rows] == [
        ("a", h14 + 5 * MINUTE),
        ("b", h14 + 5 * MINUTE),
        (None, h14 + 45 * MINUTE - 1),
    ]
    assert rows[0]["event_time"].timestamp() * 1000 == h14 + 5 * MINUTE
    latest = HourRead(str(events), lake.events_version(), "device_id", h14, h14, h14 + 45 * MINUTE, None)
    assert [(r["device_id"], r["event_time_ms"]) for b in reader.read(latest) for r in b.to_pylist()] == [
        ("a", h14 + 5 * MINUTE),
        ("b", h14 + 5 * MINUTE),
        ("d", h14 + 10 * MINUTE),
    ]


def test_the_last_sealed_hour_is_the_latest_in_the_seals_table(tmp_path):
    import pyarrow as pa
    from deltalake import write_deltalake

    from spark_jobs.offline_devices.sealed_events_source import DeltaLakeState

    hours = [DAY0 + 16 * HOUR, DAY0 + 14 * HOUR, DAY0 + 15 * HOUR]  # one commit per persist batch, any order
    for hour in hours:
        write_deltalake(
            str(tmp_path / "seals"),
            pa.table({"stream": ["telemetry"], "hour": pa.array([hour * 1000], pa.timestamp("us", tz="UTC"))}),
            mode="append",
        )
    lake = DeltaLakeState(str(tmp_path / "events"), str(tmp_path / "seals"))
    assert lake.last_sealed_hour_ms() == DAY0 + 16 * HOUR
    assert (lake.first_event_hour_ms(), lake.events_version()) == (None, None)  # no events table yet
