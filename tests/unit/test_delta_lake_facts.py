"""The Spark-free facts of a quality run (expectations.delta_lake_facts) on tables written by
deltalake: the offset index and the hour counts answer as counting every row in Python does,
for Kafka offsets and Kinesis sequence keys alike; only the files whose partitions and statistics
can hold the asked rows are read; a ledger that cannot be read, a missing table and a missing file
fail naming them (or, when asked, the missing file's rows count as missing).

Expected values are computed here from the rows written, never by the code under test.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from expectations.delta_lake_facts import DeltaLakeFacts, LedgerUnreadableError
from expectations.event_window import EventWindow, event_window
from expectations.ledger_entries import LedgerEntry
from expectations.quality_tables import QualityTablesMissingError
from harness.shipped_stream import shipped_stream
from tidemark.log_position import KAFKA_OFFSETS, KINESIS_SEQUENCE_NUMBERS, position_key
from tidemark.offset_coverage import OffsetRange

HOUR = 3_600_000
H = 1_795_309_200_000  # 2026-11-22T01:00:00Z
TS = pa.timestamp("us", tz="UTC")
SPARSE_STEP = 10**40  # Kinesis-like sequence numbers: 56 digits and more, never subtracted


def _ms(value: int) -> datetime:
    return datetime.fromtimestamp(value / 1000, UTC)


class Lake:
    """The five tables, written by deltalake, one append (one file per partition value) per call."""

    def __init__(self, stream, sparse: bool = False):
        self.stream, self.sparse = stream, sparse
        self.offset_type = pa.string() if sparse else pa.int64()

    def key(self, offset: int):
        return position_key(offset * SPARSE_STEP + 7) if self.sparse else offset

    def records(self, table: str, rows: list[tuple[int, int, int]]) -> None:
        """rows: (partition, offset index, event time ms)."""
        columns = {
            "source_partition": pa.array([r[0] for r in rows], pa.int32()),
            "source_offset": pa.array([self.key(r[1]) for r in rows], self.offset_type),
            "event_time": pa.array([_ms(r[2]) for r in rows], TS),
        }
        partition_by = None
        if table == "events":
            columns["event_date"] = pa.array([_ms(r[2]).date() for r in rows], pa.date32())
            columns["event_hour"] = pa.array([_ms(r[2]).hour for r in rows], pa.int32())
            partition_by = ["event_date", "event_hour"]
        write_deltalake(self.stream.table_path(table), pa.table(columns), mode="append", partition_by=partition_by)

    def empty_tables(self) -> None:
        for table in ("events", "late", "quarantine"):
            self.records(table, [])
        ledger = pa.table(
            {
                "step_id": pa.array([1], pa.int64()),
                "source_partition": pa.array([0], pa.int32()),
                "mode": ["live"],
                "start_offset": pa.array([self.key(0)], self.offset_type),
                "end_offset": pa.array([self.key(5)], self.offset_type),
                "log_end_offset": pa.array([self.key(9)], self.offset_type),
                "records": pa.array([4], pa.int64()),
                "late": pa.array([None], pa.int64()),
                "quarantined": pa.array([1], pa.int64()),
                "data_records": pa.array([None], pa.int64()),
                **{
                    name: pa.array([_ms(H + 1)], TS)
                    for name in ("min_event_time", "max_event_time", "partition_watermark", "global_watermark")
                },
                "read_time": pa.array([_ms(H + 2 * HOUR)], TS),
                "partition_status": ["ACTIVE"],
            }
        )
        write_deltalake(self.stream.table_path("ledger"), ledger)
        seals = pa.table({"hour": pa.array([_ms(H), _ms(H)], TS), "sealed_at": pa.array([_ms(H + HOUR), None], TS)})
        write_deltalake(self.stream.table_path("seals"), seals)


@pytest.mark.parametrize("sparse", [False, True], ids=["kafka-offsets", "kinesis-sequence-keys"])
def test_the_offset_index_answers_as_counting_every_row_does(tmp_path, sparse):
    lake = Lake(shipped_stream(tmp_path), sparse)
    lake.empty_tables()
    chance = random.Random(28)
    written: dict[str, list[tuple[int, int]]] = {"events": [], "late": [], "quarantine": []}
    for batch in range(6):  # six files per table, each over its own offsets: statistics can prune
        for table, share in (("events", 0.8), ("late", 0.1), ("quarantine", 0.1)):
            rows = [
                (p, o, H + o * 1000)
                for p in (0, 1, 2)
                for o in range(batch * 100, batch * 100 + 100)
                if chance.random() < share
            ]
            rows += [(1, batch * 100 + 5, H)] if table == "late" else []  # a duplicate of an events row, mostly
            lake.records(table, rows)
            written[table] += [(p, o) for p, o, _ in rows]
    positions = KINESIS_SEQUENCE_NUMBERS if sparse else KAFKA_OFFSETS

    def span(start: int, end: int) -> OffsetRange:
        """Offset indexes as the stream's positions (sequence numbers: index × 10**40 + 7)."""
        return OffsetRange(start * SPARSE_STEP + 7, end * SPARSE_STEP + 7) if sparse else OffsetRange(start, end)

    facts = DeltaLakeFacts(lake.stream)
    index = facts.persisted_offsets({0: span(120, 260), 1: span(100, 300)}, positions)
    assert facts.files_read == {"events": 2, "late": 2, "quarantine": 2}, "only the files of offsets 100..299"

    rows = Counter((p, o) for table in written for p, o in written[table])
    quarantine = Counter(written["quarantine"])
    ranges = {"a": (0, span(120, 200)), "b": (1, span(100, 300)), "c": (2, span(100, 200))}
    assert index.distinct_per_range(ranges) == {
        "a": len({o for p, o in rows if p == 0 and 120 <= o < 200}),
        "b": len({o for p, o in rows if p == 1 and 100 <= o < 300}),
        "c": 0,  # partition 2 was outside the bounds read
    }
    spans = {1: (1, [span(100, 150), span(200, 300)])}
    # A quarantine row of an offset events or late holds is a re-driven record's history: not counted.
    counted_rows = {(p, o): n - quarantine[(p, o)] if n > quarantine[(p, o)] else n for (p, o), n in rows.items()}
    counted_quarantine = {(p, o): 0 if rows[(p, o)] > q else q for (p, o), q in quarantine.items()}
    assert any(rows[key] > q for key, q in quarantine.items()), "the random rows hold re-driven records"
    inside = [(o, n) for (p, o), n in counted_rows.items() if p == 1 and (100 <= o < 150 or 200 <= o < 300)]
    counted = index.count_in_spans(spans)[1]
    assert (counted.rows, counted.distinct_offsets, counted.duplicated_offsets) == (
        sum(n for _, n in inside),
        len(inside),
        sum(1 for _, n in inside if n > 1),
    )
    duplicated = sorted(o for o, n in inside if n > 1)[:10]
    assert counted.duplicated_sample == tuple(o * SPARSE_STEP + 7 if sparse else o for o in duplicated)
    assert counted.quarantined == sum(
        n for (p, o), n in counted_quarantine.items() if p == 1 and (100 <= o < 150 or 200 <= o < 300)
    )
    missing = index.missing_spans({"a": (0, span(120, 200))})["a"]
    if sparse:
        assert missing == [span(120, 200)], "which sequence numbers held missing records only the log knows"
    else:
        held = {o for p, o in rows if p == 0}
        assert [o for r in missing for o in range(r.start, r.end)] == [o for o in range(120, 200) if o not in held]


def test_compacted_hours_are_read_only_where_the_ranges_event_times_lie(tmp_path):
    """A compacted hour's file holds every partition: partition 0 at offsets 10h..10h+9 and
    partition 1 at 1000+10h.. in hour h, so each file's position statistics span [10h, 1000+10h+9]
    and keep every hour from 0 to the bound for any range of partition 0. The ledger's event
    times (expectations.event_window) keep the one hour the range's records lie in."""
    lake = Lake(shipped_stream(tmp_path))
    lake.empty_tables()
    for hour in range(6):
        rows = [
            (p, base + 10 * hour + i, H + hour * HOUR + i * 1000) for p, base in ((0, 0), (1, 1000)) for i in range(10)
        ]
        lake.records("events", rows)
    bounds = {0: OffsetRange(20, 30)}
    entries = [
        LedgerEntry(1, 0, "live", 0, 20, 30, 20, H, H + HOUR + 9000, None, None, H),
        LedgerEntry(2, 0, "live", 20, 30, 30, 10, H + 2 * HOUR, H + 2 * HOUR + 9000, None, None, H),
        LedgerEntry(3, 1, "live", 1000, 1060, 1060, 60, H, H + 5 * HOUR + 9000, None, None, H),
    ]
    window = event_window(entries, bounds)
    assert window == EventWindow(H + 2 * HOUR, H + 2 * HOUR + 9000), "the rows of partition 0 meeting [20, 30) only"

    unbounded, windowed = DeltaLakeFacts(lake.stream), DeltaLakeFacts(lake.stream)
    everything = unbounded.persisted_offsets(bounds, KAFKA_OFFSETS)
    narrowed = windowed.persisted_offsets(bounds, KAFKA_OFFSETS, window)
    assert unbounded.files_read["events"] == 3, "position statistics alone keep hours 0, 1 and 2"
    assert windowed.files_read["events"] == 1
    ranges = {"r": (0, OffsetRange(20, 30))}
    assert narrowed.distinct_per_range(ranges) == everything.distinct_per_range(ranges) == {"r": 10}


def test_no_event_window_when_a_meeting_row_read_records_but_kept_no_event_times():
    old = LedgerEntry(1, 0, "live", 0, 20, 30, 20, None, None, None, None, H)
    empty = LedgerEntry(2, 0, "live", 20, 20, 30, 0, None, None, None, None, H)
    timed = LedgerEntry(3, 0, "live", 20, 30, 30, 10, H, H + 10, None, None, H)
    assert event_window([old, timed], {0: OffsetRange(0, 30)}) is None
    assert event_window([old, empty, timed], {0: OffsetRange(20, 30)}) == EventWindow(H, H + 10)
    assert event_window([old], {1: OffsetRange(0, 30)}) is None, "nothing meets the bounds: nothing to bound"


def test_hour_counts_and_gaps_read_the_hours_files_and_count_as_the_event_times_do(tmp_path):
    lake = Lake(shipped_stream(tmp_path))
    lake.empty_tables()
    times = {p: [H - 2 * HOUR + i * 97_000 + p for i in range(200)] for p in (0, 1)}  # H-2h .. H+3h23m
    events = [(p, i, t) for p, ts in times.items() for i, t in enumerate(ts) if i % 7]
    late = [(p, i, t) for p, ts in times.items() for i, t in enumerate(ts) if not i % 7]
    for part in range(0, len(events), 50):
        lake.records("events", events[part : part + 50])
    lake.records("late", late)
    lake.records("events", [(0, 999, H + 10 * 24 * HOUR)])  # ten days later: another event_date partition

    facts = DeltaLakeFacts(lake.stream)
    counts = facts.count_by_hour([H - HOUR, H])
    expected = Counter(((p, t // HOUR * HOUR), "late" if (p, i, t) in late else "events") for p, i, t in events + late)
    assert {k: (c.events, c.late) for k, c in counts.items()} == {
        (p, h): (expected[((p, h), "events")], expected[((p, h), "late")]) for p in (0, 1) for h in (H - HOUR, H)
    }
    # One file per append and event hour: those of the two hours asked for, never the later day's.
    hour_files = sum(
        len({t // HOUR * HOUR for _, _, t in events[part : part + 50]} & {H - HOUR, H})
        for part in range(0, len(events), 50)
    )
    assert facts.files_read["events"] == hour_files
    gaps = facts.longest_gaps([H])
    for p in (0, 1):
        in_hour = sorted(t for q, _, t in events + late if q == p and H <= t < H + HOUR)
        length, after, before = max((b - a, a, b) for a, b in zip(in_hour, in_hour[1:]))
        assert (gaps[(p, H)].length_ms, gaps[(p, H)].after_ms, gaps[(p, H)].before_ms) == (length, after, before)


def test_the_ledger_and_seals_read_as_the_spark_path_reads_them(tmp_path):
    lake = Lake(shipped_stream(tmp_path))
    lake.empty_tables()
    facts = DeltaLakeFacts(lake.stream)
    (entry,) = facts.ledger()
    # data_records null: records + late + quarantined, and a null among those makes it 0 (as Spark's coalesce).
    assert (entry.partition, entry.start, entry.end, entry.log_end, entry.data_records) == (0, 0, 5, 9, 0)
    assert (entry.min_event_ms, entry.read_time_ms, entry.status) == (H + 1, H + 2 * HOUR, "ACTIVE")
    assert facts.seals() == {H: H + HOUR}, "the newest sealed_at, nulls ignored"


def test_a_ledger_that_cannot_be_read_fails_naming_it(tmp_path):
    lake = Lake(shipped_stream(tmp_path))
    lake.empty_tables()
    for parquet in Path(lake.stream.table_path("ledger")).glob("*.parquet"):
        parquet.write_bytes(b"not parquet")
    with pytest.raises(LedgerUnreadableError) as raised:
        DeltaLakeFacts(lake.stream).ledger()
    assert str(raised.value).startswith(
        f"stream 'telemetry': the ledger at {lake.stream.table_path('ledger')} cannot be read ("
    )


def test_a_missing_table_is_named_and_a_missing_file_fails_unless_its_rows_may_count_as_missing(tmp_path):
    lake = Lake(shipped_stream(tmp_path))
    with pytest.raises(QualityTablesMissingError, match="the events table does not exist at"):
        DeltaLakeFacts(lake.stream).require()
    lake.empty_tables()
    lake.records("events", [(0, o, H + o) for o in range(10)])
    lake.records("events", [(0, o, H + HOUR + o) for o in range(10, 20)])
    DeltaLakeFacts(lake.stream).require()
    (gone,) = Path(lake.stream.table_path("events")).glob("event_date=*/event_hour=2/*.parquet")
    gone.unlink()
    with pytest.raises(OSError):
        DeltaLakeFacts(lake.stream).count_by_hour([H, H + HOUR])
    counts = DeltaLakeFacts(lake.stream, skip_missing_files=True).count_by_hour([H, H + HOUR])
    assert {k: (c.events, c.late) for k, c in counts.items()} == {(0, H): (10, 0)}
