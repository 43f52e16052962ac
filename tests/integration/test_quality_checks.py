"""The quality checks (expectations/) on real Spark, Delta and Great Expectations, and Kafka for
the recovery of damage.

Two streams are written row by row into Delta tables. ``cases``: each partition shows one thing
the checks must find in the sealed hour H = 2026-11-22T01:00Z (a clean partition, deleted rows,
a transactional range, a duplicate, a frozen reader, offsets lost to retention, too many late
records, ...); it is checked once, and each test reads its part of that one result; then its
tables take real Delta commits (a compaction, a RESTORE, ...) for the log-reading rules.
``clean``: three complete partitions whose topic holds the same records, checked through the
command line (hours reconciled from the seals table, log bounds stubbed), reconciled again
(nothing left), then with --hours and --reconcile; then damaged by a DELETE, found again through
the Delta log, recovered from the topic and checked OK. Expected values are derived here from
the rows written, never by calling the checks.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from expectations import quality_run
from expectations.checked_hours import hour_report_path, unchecked_sealed_hours
from expectations.delta_lake_facts import DeltaLakeFacts
from expectations.lake_damage import touched_hours
from expectations.quality_run import run_quality
from expectations.quality_status import QualityStatus
from expectations.quality_tables import QualityTablesMissingError
from harness.persist_job import REPO, produce, run_in_process, telemetry_value
from spark_jobs.lake.tables import LakeTables
from tidemark.event_time_text import parse_event_time
from tidemark.hour_report import read_hour_report
from tidemark.offset_coverage import OffsetRange, merge_ranges
from tidemark.stream_config import load_stream
from tidemark.table_schemas import LEDGER_COLUMNS, QUARANTINE_COLUMNS, SEALS_COLUMNS, ddl, events_columns, late_columns

pytestmark = pytest.mark.integration

MINUTE = 60_000
HOUR = 60 * MINUTE
H = parse_event_time("2026-11-22T01:00:00Z")
NOW = H + 2 * HOUR
QUALITY = {
    "stall_window": 6,
    "stall_timeout": "30m",
    "max_partition_lag": "1h",
    "event_time_gap": "30m",
    "max_late_per_hour": 5,
    "max_quarantined_per_hour": 3,
    "history_hours": 4,
}


class Bounds:
    def __init__(self, earliest: int, end: int):
        self.earliest, self.end = earliest, end


def _ts(ms: int | None):
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC)


def _write_config(
    folder: Path, name: str, partitions: int, bootstrap: str = "127.0.0.1:1", topic: str | None = None
) -> Path:
    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    stream = document["streams"].pop("telemetry")
    stream["source"].update(bootstrap_servers=bootstrap, topic=topic or name, partitions=partitions)
    stream["lake"] = {"root": str(folder / "lake"), "checkpoint_root": str(folder / "checkpoints")}
    stream["quality"] = dict(QUALITY)
    document["streams"] = {name: stream}
    path = folder / "streams.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


class LakeWriter:
    """Rows for one stream's tables, written in one append per table."""

    def __init__(self, spark, stream):
        self.spark, self.stream = spark, stream
        self.events, self.late, self.quarantine, self.ledger, self.seals = [], [], [], [], []
        self._batch = 0

    def _record(self, partition: int, offset: int, event_ms: int) -> dict:
        moment = _ts(event_ms)
        return {
            "source_partition": partition,
            "source_offset": offset,
            "log_timestamp": moment,
            "event_time": moment,
            "record_key": b"k",
            "device_id": f"d{partition}",
            "lat": 52.0,
            "lon": 4.9,
            "battery": 50,
            "step_id": 0,
            "event_date": moment.date(),
            "event_hour": moment.hour,
        }

    def event(self, partition: int, offset: int, event_ms: int) -> None:
        self.events.append(self._record(partition, offset, event_ms))

    def late_record(self, partition: int, offset: int, event_ms: int) -> None:
        self.late.append(self._record(partition, offset, event_ms) | {"global_watermark": _ts(NOW - HOUR)})

    def quarantined(self, partition: int, offset: int) -> None:
        self.quarantine.append(
            {
                "source_partition": partition,
                "source_offset": offset,
                "log_timestamp": _ts(H),
                "record_key": None,
                "raw_value": b"{bad",
                "reason": "malformed_json",
                "detail": "x",
                "step_id": 0,
                "read_time": _ts(H),
            }
        )

    def range(
        self,
        partition,
        start,
        end,
        data_records,
        event_ms,
        read_ms,
        log_end=None,
        mode="live",
        watermark_ms=None,
        global_ms=None,
    ) -> None:
        """A ledger row; ``event_ms`` is the (min, max) event time of its records or None."""
        self._batch += 1
        self.ledger.append(
            {
                "stream": self.stream.name,
                "step_id": self._batch,
                "source_partition": partition,
                "mode": mode,
                "start_offset": start,
                "end_offset": end,
                "log_end_offset": end if log_end is None else log_end,
                "records": data_records,
                "quarantined": 0,
                "late": 0,
                "data_records": data_records,
                "min_event_time": _ts(event_ms[0]) if event_ms else None,
                "max_event_time": _ts(event_ms[1]) if event_ms else None,
                "partition_watermark": _ts(watermark_ms),
                "global_watermark": _ts(global_ms),
                "partition_status": "ACTIVE",
                "slicing": "event_time",
                "read_time": _ts(read_ms),
                "open_transaction_since": None,
                "held_by_open_transaction": False,
            }
        )

    def persisted_range(self, partition, offsets, start, end, times, read_ms, **ledger) -> None:
        """Events for ``offsets`` at ``times`` (same length) and the ledger row [start, end) holding them."""
        for offset, event_ms in zip(offsets, times):
            self.event(partition, offset, event_ms)
        self.range(partition, start, end, len(offsets), (min(times), max(times)), read_ms, **ledger)

    def seal(self, hour_ms: int, sealed_at_ms: int) -> None:
        self.seals.append(
            {
                "stream": self.stream.name,
                "hour": _ts(hour_ms),
                "sealed_at": _ts(sealed_at_ms),
                "global_watermark": _ts(sealed_at_ms),
                "micro_batch_id": 1,
            }
        )

    def write(self) -> None:
        LakeTables(self.spark, self.stream).ensure()
        payload = self.stream.payload
        for table, rows, columns in (
            ("events", self.events, events_columns(payload)),
            ("late", self.late, late_columns(payload)),
            ("quarantine", self.quarantine, QUARANTINE_COLUMNS),
            ("ledger", self.ledger, LEDGER_COLUMNS),
            ("seals", self.seals, SEALS_COLUMNS),
        ):
            if rows:
                frame = self.spark.createDataFrame(
                    [tuple(row.get(n) for n, _ in columns) for row in rows], ddl(columns)
                )
                frame.write.format("delta").mode("append").save(self.stream.table_path(table))


def _spread(count: int, start_ms: int = H, span_ms: int = HOUR) -> list[int]:
    """``count`` event times rising evenly over [start, start + span)."""
    return [start_ms + i * span_ms // count for i in range(count)]


def _complete_partition(lake: LakeWriter, partition: int, read_ms: int = NOW - 5 * MINUTE) -> None:
    """100 records of hour H at offsets 0..99, read in two live ranges of 50."""
    times = _spread(100)
    lake.persisted_range(partition, range(0, 50), 0, 50, times[:50], read_ms - 5 * MINUTE)
    lake.persisted_range(partition, range(50, 100), 50, 100, times[50:], read_ms)


# ------------------------------------------------------------------------------------------------
# The cases stream: one partition per case, checked once for hour H.

(
    OK_CLEAN,
    HOLE_DELETED,
    TRANSACTIONAL,
    DUPLICATE,
    FROZEN,
    LOST_POSITION,
    TOO_LATE,
    LOST_HOLE,
    UNREAD,
    SILENT,
    TIME_GAP,
    QUARANTINED,
    LAGGING,
    UNDERCOUNTED,
    GROWING_LAG,
    UNDECODABLE,
) = range(16)
PARTITIONS = 16
DELETED_OFFSETS = [10, 11, 12, 60]


@pytest.fixture(scope="module")
def gx_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("gx")


@pytest.fixture(scope="module")
def cases(spark, tmp_path_factory, gx_dir):
    folder = tmp_path_factory.mktemp("cases")
    stream = load_stream(_write_config(folder, "cases", PARTITIONS), "cases")
    lake = LakeWriter(spark, stream)
    bounds = {}

    _complete_partition(lake, OK_CLEAN)
    _complete_partition(lake, HOLE_DELETED)

    # Offsets 25..34 held an aborted transaction and its marker: 60 offsets, 50 data records.
    data_offsets = [*range(0, 25), *range(35, 60)]
    times = _spread(90)
    lake.persisted_range(TRANSACTIONAL, data_offsets, 0, 60, times[:50], NOW - 10 * MINUTE)
    lake.persisted_range(TRANSACTIONAL, range(60, 100), 60, 100, times[50:], NOW - 5 * MINUTE)

    lake.persisted_range(DUPLICATE, range(100), 0, 100, _spread(100), NOW - 5 * MINUTE)
    lake.late_record(DUPLICATE, 42, H + 30 * MINUTE)  # the same offset persisted to events and to late

    # Frozen: position 100 since NOW-80m while the log end grows from 100 to 350 (now 400).
    lake.persisted_range(FROZEN, range(100), 0, 100, _spread(100), NOW - 80 * MINUTE)
    for read_ms, log_end in zip((60, 50, 40, 30, 10), (150, 200, 250, 300, 350)):
        lake.range(FROZEN, 100, 100, 0, None, NOW - read_ms * MINUTE, log_end=log_end)
    bounds[FROZEN] = Bounds(0, 400)

    lake.persisted_range(LOST_POSITION, range(100), 0, 100, _spread(100), NOW - 5 * MINUTE)
    bounds[LOST_POSITION] = Bounds(150, 300)  # [100, 150) fell out of retention unread

    times = _spread(50)
    for offset in range(40):
        lake.event(TOO_LATE, offset, times[offset])
    for offset in range(40, 50):
        lake.late_record(TOO_LATE, offset, times[offset])  # 10 late records of H, the limit is 5
    lake.range(TOO_LATE, 0, 50, 50, (times[0], times[-1]), NOW - 5 * MINUTE)

    _complete_partition(lake, LOST_HOLE)
    bounds[LOST_HOLE] = Bounds(20, 100)  # rows 5..9 and 70 go missing below; 5..9 can no longer be replayed

    times = _spread(90)
    lake.persisted_range(UNREAD, range(0, 50), 0, 50, times[:50], NOW - 10 * MINUTE)
    lake.persisted_range(UNREAD, range(60, 100), 60, 100, times[50:], NOW - 5 * MINUTE)  # nobody read [50, 60)

    for back in (4, 3, 2, 1):  # records in each of the 4 history hours, none in H
        start = (4 - back) * 10
        lake.persisted_range(
            SILENT, range(start, start + 10), start, start + 10, _spread(10, H - back * HOUR), NOW - (5 + back) * MINUTE
        )

    gap_times = _spread(10, H, 10 * MINUTE) + _spread(10, H + 50 * MINUTE, 10 * MINUTE)  # silent 09:00 → 50:00
    lake.persisted_range(TIME_GAP, range(20), 0, 20, gap_times, NOW - 5 * MINUTE)

    times = _spread(50)
    for offset in range(45):
        lake.event(QUARANTINED, offset, times[offset])
    for offset in range(45, 50):
        lake.quarantined(QUARANTINED, offset)  # 5 quarantined in H's range, the limit is 3
    lake.range(QUARANTINED, 0, 50, 50, (times[0], times[44]), NOW - 5 * MINUTE)

    # W_p at H+10m while G is at H+90m: 80 minutes behind, the limit is 1h; the position moves.
    times = _spread(70, H, 10 * MINUTE)
    for (start, end), read_ms in zip(((0, 50), (50, 60), (60, 70)), (20, 10, 5)):
        lake.persisted_range(
            LAGGING,
            range(start, end),
            start,
            end,
            times[start:end],
            NOW - read_ms * MINUTE,
            log_end=200,
            watermark_ms=H + 10 * MINUTE,
            global_ms=H + 90 * MINUTE,
        )
    bounds[LAGGING] = Bounds(0, 200)

    times = _spread(50)
    for offset in range(50):
        lake.event(UNDERCOUNTED, offset, times[offset])
    lake.range(UNDERCOUNTED, 0, 50, 40, (times[0], times[-1]), NOW - 5 * MINUTE)  # the ledger says 40

    # The reader moves, but the producers move faster: lag 40, 60, 90.
    times = _spread(30)
    for (start, end), read_ms, log_end in zip(((0, 10), (10, 20), (20, 30)), (15, 10, 5), (50, 80, 120)):
        lake.persisted_range(
            GROWING_LAG, range(start, end), start, end, times[start:end], NOW - read_ms * MINUTE, log_end=log_end
        )
    bounds[GROWING_LAG] = Bounds(0, 120)

    # Not one record could be decoded: all 10 in quarantine, no event time in the range (limit 3).
    for offset in range(10):
        lake.quarantined(UNDECODABLE, offset)
    lake.range(UNDECODABLE, 0, 10, 10, None, NOW - 5 * MINUTE)

    lake.seal(H - HOUR, H + HOUR)
    lake.seal(H, H + 2 * HOUR - 10 * MINUTE)
    lake.write()

    from delta.tables import DeltaTable

    DeltaTable.forPath(spark, stream.table_path("events")).delete(
        f"source_partition = {HOLE_DELETED} AND source_offset IN ({', '.join(map(str, DELETED_OFFSETS))})"
        f" OR source_partition = {LOST_HOLE} AND source_offset IN (5, 6, 7, 8, 9, 70)"
    )

    positions = {p: max(r["end_offset"] for r in lake.ledger if r["source_partition"] == p) for p in range(PARTITIONS)}
    log_bounds = {p: bounds.get(p, Bounds(0, positions[p])) for p in range(PARTITIONS)}
    report_dir = folder / "reports"
    result = run_quality(DeltaLakeFacts(stream), stream, [H], log_bounds, NOW, report_dir, gx_dir, "cases-1")
    return {"result": result, "stream": stream, "report_dir": report_dir, "ledger": lake.ledger}


def test_each_partition_gets_the_status_its_case_implies(cases):
    statuses = {p.partition: p.status for p in cases["result"].partitions}
    assert statuses == {
        OK_CLEAN: QualityStatus.OK,
        HOLE_DELETED: QualityStatus.HOLE,
        TRANSACTIONAL: QualityStatus.OK,
        DUPLICATE: QualityStatus.WARN,
        FROZEN: QualityStatus.STOP,
        LOST_POSITION: QualityStatus.LOST,
        TOO_LATE: QualityStatus.WARN,
        LOST_HOLE: QualityStatus.LOST,
        UNREAD: QualityStatus.HOLE,
        SILENT: QualityStatus.WARN,
        TIME_GAP: QualityStatus.WARN,
        QUARANTINED: QualityStatus.WARN,
        LAGGING: QualityStatus.LAGGING,
        UNDERCOUNTED: QualityStatus.WARN,
        GROWING_LAG: QualityStatus.WARN,
        UNDECODABLE: QualityStatus.STALL,
    }
    failed = {p.partition: p.failed_checks for p in cases["result"].partitions if p.failed_checks}
    assert failed == {
        HOLE_DELETED: ("completeness",),
        DUPLICATE: ("uniqueness",),
        FROZEN: ("stall",),
        LOST_POSITION: ("retention",),
        TOO_LATE: ("late_and_quarantine",),
        LOST_HOLE: ("completeness", "retention"),
        UNREAD: ("completeness",),
        SILENT: ("gaps",),
        TIME_GAP: ("gaps",),
        QUARANTINED: ("late_and_quarantine",),
        LAGGING: ("stall",),
        UNDERCOUNTED: ("completeness",),
        UNDECODABLE: ("decoding",),
    }, "a growing lag is a warning: it fails no check"


def test_every_check_family_fails_on_the_cases_stream(cases):
    checks = {c.name: (c.ran, c.success) for c in cases["result"].checks}
    assert checks == dict.fromkeys(
        ("completeness", "retention", "gaps", "uniqueness", "late_and_quarantine", "stall", "decoding"), (True, False)
    )
    rules = {c.name: (c.failed_rules, c.warned_rules) for c in cases["result"].checks}
    assert rules == {
        "completeness": (("persisted_equals_data_records", "live_ranges_contiguous"), ()),
        "retention": (("position_still_retained", "no_hole_below_earliest"), ()),
        "gaps": (("no_silent_hour", "event_time_gap_within_threshold"), ()),
        "uniqueness": (("one_row_per_offset",), ()),
        "late_and_quarantine": (("late_within_limit", "quarantined_within_limit"), ()),
        "stall": (("reading_progresses",), ("lag_not_growing",)),
        "decoding": (("records_decodable",), ()),
    }
    assert cases["result"].success is False


def test_a_complete_partition_is_ok_with_its_figures(cases):
    result = cases["result"]
    clean = result.partition(OK_CLEAN)
    assert (clean.records, clean.late, clean.quarantined, clean.position, clean.lag) == (100, 0, 0, 100, 0)
    assert (clean.holes, clean.lost, clean.failed_checks) == ((), (), ())
    hour = result.hour(H, OK_CLEAN)
    assert (hour.status, hour.ranges, hour.data_records, hour.persisted, hour.duplicated_offsets) == (
        QualityStatus.OK,
        2,
        100,
        100,
        0,
    )


def test_deleted_rows_are_a_hole_with_their_exact_offsets_and_a_recovery_request(cases):
    result = cases["result"]
    hole = result.partition(HOLE_DELETED)
    assert [(r.start, r.end) for r in hole.holes] == [(10, 13), (60, 61)]
    assert [
        (h.start, h.end, h.data_records, h.persisted, [(m.start, m.end) for m in h.missing]) for h in hole.hole_ranges
    ] == [(0, 50, 50, 47, [(10, 13)]), (50, 100, 50, 49, [(60, 61)])]
    hour = result.hour(H, HOLE_DELETED)
    assert (hour.status, hour.records, hour.data_records, hour.persisted) == (QualityStatus.HOLE, 96, 100, 96)
    requests = {r.partition: r for r in result.recovery_requests}
    assert requests[HOLE_DELETED].ranges == (OffsetRange(10, 13), OffsetRange(60, 61))
    assert (requests[HOLE_DELETED].stream, requests[HOLE_DELETED].restart_live) == ("cases", False)


def test_a_transactional_range_with_fewer_records_than_offsets_is_complete(cases):
    result = cases["result"]
    transactional = result.partition(TRANSACTIONAL)
    assert (transactional.status, transactional.holes, transactional.hole_ranges) == (QualityStatus.OK, (), ())
    hour = result.hour(H, TRANSACTIONAL)
    assert (hour.ranges, hour.data_records, hour.persisted) == (2, 90, 90)


def test_the_same_offset_in_events_and_late_fails_uniqueness(cases):
    result = cases["result"]
    hour = result.hour(H, DUPLICATE)
    assert (hour.duplicated_offsets, hour.failed_checks) == (1, ("uniqueness",))
    assert hour.reasons == (
        "hour 2026-11-22T01:00:00Z: 1 offsets persisted more than once (101 rows for 100 offsets), e.g. offsets 42",
    )
    assert result.partition(DUPLICATE).holes == (), "the duplicate does not hide or make a hole"


def test_a_frozen_partition_is_stop_and_asks_to_replay_from_its_position_to_the_log_end(cases):
    result = cases["result"]
    frozen = result.partition(FROZEN)
    assert (frozen.position, frozen.log_end, frozen.lag) == (100, 400, 300)
    assert frozen.reasons[0].startswith("STOP: read position stuck at offset 100 for 70m")
    requests = {r.partition: r for r in result.recovery_requests}
    assert (requests[FROZEN].ranges, requests[FROZEN].restart_live) == ((OffsetRange(100, 400),), True)


def test_offsets_behind_the_earliest_retained_offset_are_lost_and_never_requested(cases):
    result = cases["result"]
    lost = result.partition(LOST_POSITION)
    assert [(r.start, r.end) for r in lost.lost] == [(100, 150)]
    assert lost.reasons == (
        "offsets [100, 150) were never read and are no longer in the log (read position 100, "
        "earliest retained offset 150): 50 offsets lost",
    )
    lost_hole = result.partition(LOST_HOLE)
    assert [(r.start, r.end) for r in lost_hole.lost] == [(5, 10)]
    assert [(r.start, r.end) for r in lost_hole.holes] == [(70, 71)], "holes are what can still be replayed"
    assert result.hour(H, LOST_HOLE).status is QualityStatus.LOST
    assert lost_hole.reason == (
        "offsets [5, 10) are missing from the lake and below the earliest retained offset 20: "
        "they can no longer be recovered"
    ), "the sentence behind the worst status"
    assert len(lost_hole.reasons) == 3, "and every finding: two hole ranges, one lost part"
    requests = {r.partition: [(o.start, o.end) for o in r.ranges] for r in result.recovery_requests}
    assert requests == {
        HOLE_DELETED: [(10, 13), (60, 61)],
        FROZEN: [(100, 400)],
        LOST_HOLE: [(70, 71)],
        UNREAD: [(50, 60)],
    }


def test_offsets_no_range_read_are_a_hole(cases):
    unread = cases["result"].partition(UNREAD)
    assert [(r.start, r.end) for r in unread.holes] == [(50, 60)]
    assert unread.hole_ranges == (), "both ranges hold all their records; the gap is between them"


def test_too_many_late_or_quarantined_records_fail_their_limits(cases):
    result = cases["result"]
    late = result.hour(H, TOO_LATE)
    assert (late.records, late.late, late.failed_checks) == (40, 10, ("late_and_quarantine",))
    assert late.reasons == ("hour 2026-11-22T01:00:00Z: 10 late records (limit 5)",)
    assert (result.partition(TOO_LATE).late, result.partition(TOO_LATE).holes) == (10, ())
    quarantined = result.hour(H, QUARANTINED)
    assert (quarantined.records, quarantined.quarantined) == (45, 5)
    assert quarantined.reasons == ("hour 2026-11-22T01:00:00Z: 5 quarantined records (limit 3)",)
    assert result.hour(H, OK_CLEAN).late == 0


def test_a_silent_hour_and_a_long_event_time_gap_are_reported(cases):
    result = cases["result"]
    silent = result.hour(H, SILENT)
    assert (silent.records, silent.active_history_hours) == (0, 4)
    assert silent.reasons == (
        "hour 2026-11-22T01:00:00Z: silent hour, no records although the partition had "
        "records in 4 of the previous 4 hours",
    )
    gap = result.hour(H, TIME_GAP)
    assert gap.longest_event_time_gap_ms == 41 * MINUTE
    assert gap.reasons == (
        "hour 2026-11-22T01:00:00Z: no event time between 2026-11-22T01:09:00.000Z and "
        "2026-11-22T01:50:00.000Z (41m, threshold 30m)",
    )
    assert result.hour(H, OK_CLEAN).longest_event_time_gap_ms == 36_000


def test_a_partition_far_behind_the_global_watermark_is_lagging(cases):
    lagging = cases["result"].partition(LAGGING)
    assert (lagging.position, lagging.lag, lagging.partition_watermark_ms) == (70, 130, H + 10 * MINUTE)
    assert lagging.reasons == ("LAGGING: partition watermark 80m behind the global watermark (max partition lag 1h)",)


def test_a_ledger_counting_fewer_records_than_persisted_is_a_warning_not_a_hole(cases):
    undercounted = cases["result"].partition(UNDERCOUNTED)
    (step,) = [row["step_id"] for row in cases["ledger"] if row["source_partition"] == UNDERCOUNTED]
    assert (undercounted.holes, undercounted.hole_ranges) == ((), ())
    assert undercounted.reasons == (
        f"hour 2026-11-22T01:00:00Z: live range [0, 50) of step {step}: the ledger counts "
        "40 data records but 50 distinct offsets are persisted in it: the ledger undercounts",
    )


def test_a_lag_that_grows_across_the_window_warns_without_failing(cases):
    growing = cases["result"].partition(GROWING_LAG)
    assert (growing.position, growing.lag, growing.failed_checks) == (30, 90, ())
    assert growing.reasons == (
        "WARN: lag grew in each of 3 rows, from 40 to 90 offsets, while the position moved from 10 to 30",
    )
    assert GROWING_LAG not in {r.partition for r in cases["result"].recovery_requests}


def test_a_partition_that_decodes_nothing_is_a_stall_and_asks_no_replay(cases):
    """Every record in quarantine: no hour carries it, so only the decoding check can see it."""
    undecodable = cases["result"].partition(UNDECODABLE)
    assert (undecodable.status, undecodable.failed_checks) == (QualityStatus.STALL, ("decoding",))
    assert undecodable.reasons == (
        "STALL: its newest 1 live batches read 10 records and not one could be decoded (all in quarantine, "
        "each with its reason): its event time does not advance",
    )
    assert UNDECODABLE not in {r.partition for r in cases["result"].recovery_requests}, "a replay decodes nothing"


def test_json_and_html_summaries_hold_every_partition_and_link_data_docs(cases):
    result = cases["result"]
    summary = json.loads(Path(result.summary_json).read_text())
    assert summary == json.loads(json.dumps(result.to_json()))
    assert Path(result.summary_json).parent == cases["report_dir"] / "cases" / "runs" / "cases-1"
    assert [p["partition"] for p in summary["partitions"]] == list(range(PARTITIONS))
    assert summary["hours"] == ["2026-11-22T01:00:00Z"]

    html = Path(result.summary_html).read_text()
    for p in result.partitions:
        assert f'<tr><td class="n">{p.partition}</td><td><span class="status"' in html
    assert html.count(">HOLE</span>") == 2 + 2 + 1, "two partitions, the legend, and hour rows"
    assert "<script" not in html and "http" not in html, "no scripts, no external assets"
    assert "[10, 13), [60, 61)" in html
    href = html.split('<a href="', 1)[1].split('"', 1)[0]
    assert (Path(result.summary_html).parent / href).resolve() == Path(result.data_docs_index).resolve()
    assert Path(result.data_docs_index).is_file()
    assert Path(result.data_docs_index).name == "index.html"


def test_the_checked_hour_is_remembered_and_reconciling_finds_the_rest(cases):
    report_dir, result = cases["report_dir"], cases["result"]
    path = hour_report_path(report_dir, "cases", H)
    assert path.name == "2026-11-22T01Z.json" and str(path) in result.hour_reports
    remembered = read_hour_report(path)
    assert (remembered.hour, remembered.run_name, remembered.sealed_at_ms) == (
        "2026-11-22T01:00:00Z",
        "cases-1",
        H + 2 * HOUR - 10 * MINUTE,
    )
    assert remembered.success is False
    seals = {H - HOUR: H + HOUR, H: H + 2 * HOUR - 10 * MINUTE}
    assert unchecked_sealed_hours(seals, report_dir, "cases") == [H - HOUR]
    assert unchecked_sealed_hours({**seals, H: NOW}, report_dir, "cases") == [H - HOUR, H], "amended after the check"


def test_the_spark_free_facts_are_the_facts_spark_computes_on_every_case(spark, cases):
    """The regular run reads the lake without Spark (expectations.delta_lake_facts); the sweep with
    Spark (expectations.lake_facts.SparkLakeFacts). On the cases stream's tables (deleted rows,
    duplicates across tables, an aborted transaction's offsets, late and quarantined rows, empty
    and history hours) both answer every question alike."""
    from expectations.lake_facts import SparkLakeFacts
    from tidemark.log_position import KAFKA_OFFSETS

    stream = cases["stream"]
    arrow, spark_facts = DeltaLakeFacts(stream), SparkLakeFacts(spark, stream)
    ledger = arrow.ledger()
    assert ledger == spark_facts.ledger()
    assert len(ledger) == len(cases["ledger"])
    assert arrow.seals() == spark_facts.seals() == {H - HOUR: H + HOUR, H: H + 2 * HOUR - 10 * MINUTE}

    hours = [H - back * HOUR for back in range(QUALITY["history_hours"] + 1)]
    counts = arrow.count_by_hour(hours)
    assert counts == spark_facts.count_by_hour(hours)
    assert counts[(TOO_LATE, H)].late == 10 and counts[(SILENT, H - 4 * HOUR)].events == 10
    gaps = arrow.longest_gaps([H])
    assert gaps == spark_facts.longest_gaps([H])
    assert (gaps[(TIME_GAP, H)].after_ms, gaps[(TIME_GAP, H)].before_ms) == (H + 9 * MINUTE, H + 50 * MINUTE)

    bounds = {p: OffsetRange(0, 400) for p in range(PARTITIONS)}
    ranges = {
        (e.partition, e.start, e.end): (e.partition, OffsetRange(e.start, e.end)) for e in ledger if e.end > e.start
    }
    ranges |= {(p, 0, 400): (p, OffsetRange(0, 400)) for p in range(PARTITIONS)}
    scopes = {p: (p, [OffsetRange(0, 30), OffsetRange(40, 120)]) for p in range(PARTITIONS)}
    answers = []
    for facts in (arrow, spark_facts):
        offsets = facts.persisted_offsets(bounds, KAFKA_OFFSETS)
        try:
            answers.append(
                (offsets.distinct_per_range(ranges), offsets.count_in_spans(scopes), offsets.missing_spans(ranges))
            )
        finally:
            offsets.release()
    assert answers[0] == answers[1]
    distinct, in_spans, missing = answers[0]
    assert missing[(HOLE_DELETED, 0, 400)][0].start == min(DELETED_OFFSETS)
    assert in_spans[DUPLICATE].duplicated_sample == (42,) and in_spans[QUARANTINED].quarantined == 5
    assert distinct[(TRANSACTIONAL, 0, 60)] == 50


def test_the_delta_log_tells_a_compaction_from_damage_and_names_the_hours_each_commit_touched(spark, cases):
    """Real delta-spark commits on the cases stream's tables (after every test above read its
    result): OPTIMIZE keeps every row (no damage, no re-check); a compaction of late that drops a
    row, a RESTORE of events and a DELETE in quarantine are damage, each with the hours it touched."""
    from delta.tables import DeltaTable

    from expectations.delta_log import removed_file_footprints, scan_log
    from expectations.ledger_entries import read_ledger

    stream = cases["stream"]
    start = scan_log(stream, None)
    assert start.damage == () and set(start.versions) == {"events", "late", "quarantine"}

    DeltaTable.forPath(spark, stream.table_path("events")).optimize().executeCompaction()
    compacted = scan_log(stream, start.versions)
    assert (compacted.damage, compacted.commits_read) == ((), 1), "a compaction that keeps every row raises nothing"

    late = spark.read.format("delta").load(stream.table_path("late"))
    late.where(f"NOT (source_partition = {TOO_LATE} AND source_offset = 45)").write.format("delta").mode(
        "overwrite"
    ).option("dataChange", "false").save(stream.table_path("late"))
    DeltaTable.forPath(spark, stream.table_path("events")).restoreToVersion(start.versions["events"])
    DeltaTable.forPath(spark, stream.table_path("quarantine")).delete(
        f"source_partition = {QUARANTINED} AND source_offset = 49"
    )
    scan = scan_log(stream, compacted.versions)
    prints = removed_file_footprints(stream, list(scan.damage))
    entries = read_ledger(spark.read.format("delta").load(stream.table_path("ledger")))
    sealed = [H - 4 * HOUR, H - 3 * HOUR, H - 2 * HOUR, H - HOUR, H]
    found = [touched_hours(d, sealed, entries, prints) for d in scan.damage]
    assert [(d.table, d.operation, d.kind.value, d.rows, d.hours_ms) for d in found] == [
        # The RESTORE took back the compacted files, which only hour H had: the earlier hours'
        # partitions held one file each, nothing for OPTIMIZE to rewrite.
        ("events", "RESTORE", "rows_removed", None, (H,)),
        ("late", "WRITE", "rows_dropped", 1, (H,)),
        ("quarantine", "DELETE", "rows_removed", 1, (H,)),
    ]


# ------------------------------------------------------------------------------------------------
# The clean stream, through the command line.


@pytest.fixture(scope="module")
def clean(spark, kafka_broker, tmp_path_factory):
    """Three complete partitions; the topic holds the same 100 records a partition (same event
    times, the log timestamp = the event time), so a recovery can replay what goes missing."""
    folder = tmp_path_factory.mktemp("clean")
    topic = "quality_clean"
    kafka_broker.create_topic(topic, 3)
    produce(
        kafka_broker.bootstrap,
        topic,
        [
            (partition, telemetry_value(f"d{partition}", event_ms), event_ms)
            for partition in range(3)
            for event_ms in _spread(100)
        ],
    )
    conf = _write_config(folder, "clean", 3, kafka_broker.bootstrap, topic)
    stream = load_stream(conf, "clean")
    lake = LakeWriter(spark, stream)
    for partition in range(3):
        _complete_partition(lake, partition)
    lake.seal(H, H + 2 * HOUR - 10 * MINUTE)
    lake.write()
    return {"conf": conf, "stream": stream, "folder": folder}


def _cli(clean, gx_dir, run_name, *extra, real_log: bool = False):
    """The quality run's command line; its log bounds are (0, 100) per partition unless
    ``real_log``, then the topic's own."""
    folder = clean["folder"]
    if not real_log:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(quality_run, "read_log_bounds", lambda stream: {p: Bounds(0, 100) for p in range(3)})
            return _cli(clean, gx_dir, run_name, *extra, real_log=True)
    return quality_run.main(
        [
            "--stream",
            "clean",
            "--conf",
            str(clean["conf"]),
            "--report-dir",
            str(folder / "reports"),
            "--gx-dir",
            str(gx_dir),
            "--run-name",
            run_name,
            "--result",
            str(folder / f"{run_name}.json"),
            "--now-ms",
            str(NOW),
            *extra,
        ]
    )


def test_the_command_line_checks_the_sealed_hours_without_a_report_then_none(spark, clean, gx_dir, monkeypatch, capsys):
    monkeypatch.setattr(quality_run, "read_log_bounds", lambda stream: {p: Bounds(0, 100) for p in range(3)})

    assert _cli(clean, gx_dir, "clean-1") == 0
    first = json.loads((clean["folder"] / "clean-1.json").read_text())
    assert first["hours"] == ["2026-11-22T01:00:00Z"], "reconciled from the seals table"
    assert first["success"] is True and first["recovery_requests"] == []
    assert [
        (p["partition"], p["status"], p["records"], p["lag"], p["holes"], p["lost"]) for p in first["partitions"]
    ] == [(p, "OK", 100, 0, [], []) for p in range(3)]
    assert all(check["ran"] and check["success"] for check in first["checks"])
    assert Path(first["paths"]["summary_html"]).is_file() and Path(first["paths"]["data_docs_index"]).is_file()
    assert "partition 0: OK" in capsys.readouterr().out

    assert _cli(clean, gx_dir, "clean-2") == 0
    second = json.loads((clean["folder"] / "clean-2.json").read_text())
    assert second["hours"] == [], "the hour was remembered: nothing left to check"
    assert {c["name"]: c["ran"] for c in second["checks"]} == {
        "completeness": False,
        "retention": True,
        "gaps": False,
        "uniqueness": False,
        "late_and_quarantine": False,
        "stall": True,
        "decoding": True,
    }
    assert [p["status"] for p in second["partitions"]] == ["OK"] * 3

    # A seal that arrived late for an earlier hour: --reconcile adds it to the hours asked for.
    late_seal = LakeWriter(spark, clean["stream"])
    late_seal.seal(H - HOUR, NOW)
    late_seal.write()
    assert _cli(clean, gx_dir, "clean-3", "--hours", "2026-11-22T01:00:00Z", "--reconcile") == 0
    third = json.loads((clean["folder"] / "clean-3.json").read_text())
    assert third["hours"] == ["2026-11-22T00:00:00Z", "2026-11-22T01:00:00Z"]
    assert third["success"] is True


def test_rows_deleted_from_a_checked_hour_are_a_hole_naming_the_delete_until_recovery_restores_them(
    spark, clean, gx_dir
):
    """Damage after the check (issue 25): the hour was checked OK by the runs above; a DELETE
    takes three rows of partition 1; the next scheduled run (no hours given) checks the hour
    again because the Delta log shows the DELETE, reports the HOLE with exactly those offsets and
    the operation, recovery replays them from the topic, and the re-check is OK."""
    from delta.tables import DeltaTable

    from spark_jobs.replay.recover import main as recover_main
    from tidemark.recovery_request import RecoveryRequest

    folder, stream = clean["folder"], clean["stream"]
    before = read_hour_report(hour_report_path(folder / "reports", "clean", H))
    assert before.success is True and before.damage == (), "checked OK before the damage"
    damaged_at = time.monotonic()
    DeltaTable.forPath(spark, stream.table_path("events")).delete(
        "source_partition = 1 AND source_offset IN (10, 11, 12)"
    )
    delete_version = max(int(p.stem) for p in (Path(stream.table_path("events")) / "_delta_log").glob("*.json"))

    assert _cli(clean, gx_dir, "clean-damaged", real_log=True) == 0
    reported_at = time.monotonic()
    found = json.loads((folder / "clean-damaged.json").read_text())
    assert found["hours"] == ["2026-11-22T01:00:00Z"], "only the damaged hour: the others were not touched"
    assert [(d["table"], d["version"], d["operation"], d["kind"], d["rows"], d["hours"]) for d in found["damage"]] == [
        ("events", delete_version, "DELETE", "rows_removed", 3, ["2026-11-22T01:00:00Z"])
    ]
    statuses = {p["partition"]: (p["status"], p["holes"]) for p in found["partitions"]}
    assert statuses == {0: ("OK", []), 1: ("HOLE", [[10, 13]]), 2: ("OK", [])}
    (hole,) = [p for p in found["partitions"] if p["partition"] == 1]
    assert hole["reason"].startswith("hour 2026-11-22T01:00:00Z: live range [0, 50) of step ")
    assert hole["reason"].endswith(
        f"offsets with no row: [10, 13); the lake's log shows DELETE (events version "
        f"{delete_version}, {found['damage'][0]['committed_at']}) removed or rewrote 3 rows"
    )
    assert found["recovery_requests"] == [
        {
            "stream": "clean",
            "partition": 1,
            "ranges": [{"start": 10, "end": 13}],
            "reason": "3 offsets missing from the lake: [10, 13)",
            "restart_live": False,
        }
    ]
    report = read_hour_report(hour_report_path(folder / "reports", "clean", H))
    assert (report.success, [d.operation for d in report.damage]) == (False, ["DELETE"])
    assert "DELETE (events version" in Path(found["paths"]["summary_html"]).read_text()

    # The request the run reported goes to the job as it is, as the recover DAG passes it on.
    request = RecoveryRequest.from_json(found["recovery_requests"][0])
    code = run_in_process(
        recover_main,
        ["--conf", str(clean["conf"]), "--request", request.encode(), "--result", str(folder / "recovered.json")],
        folder / "recover.log",
    )
    assert code == 0
    recovered = json.loads((folder / "recovered.json").read_text())
    assert (recovered["inserted"], recovered["event_hours"]) == (3, ["2026-11-22T01:00:00.000Z"])

    # As the recover DAG re-checks: the hours it touched, plus whatever else is due.
    assert (
        _cli(
            clean,
            gx_dir,
            "clean-recovered",
            "--hours",
            ",".join(recovered["event_hours"]),
            "--reconcile",
            real_log=True,
        )
        == 0
    )
    ok_at = time.monotonic()
    again = json.loads((folder / "clean-recovered.json").read_text())
    assert again["damage"] == [], "the recovery's insert-only MERGE removed nothing"
    assert [(p["partition"], p["status"], p["records"], p["holes"]) for p in again["partitions"]] == [
        (p, "OK", 100, []) for p in range(3)
    ]
    assert again["success"] is True
    figures = {
        "damage_to_hole_reported_s": round(reported_at - damaged_at, 1),
        "damage_to_ok_again_s": round(ok_at - damaged_at, 1),
    }
    print(
        f"damage → HOLE reported {figures['damage_to_hole_reported_s']} s, → OK again {figures['damage_to_ok_again_s']} s"
    )
    (folder / "damage_figures.json").write_text(json.dumps(figures))


def test_the_sweep_finds_rows_whose_file_was_deleted_by_hand_which_no_commit_shows(spark, clean, gx_dir):
    """A file of hour H removed from disk (no commit says so): the sweep checks completeness of
    every sealed hour the source log retains, names the missing file, and reports exactly the
    offsets that file held as holes. It writes no hour report and runs no other check."""
    events = Path(clean["stream"].table_path("events"))
    in_hour = sorted(
        uri for uri in spark.read.format("delta").load(str(events)).inputFiles() if "/event_hour=1/" in uri
    )
    victim = Path(in_hour[0].removeprefix("file:"))
    held: dict[int, list[int]] = {}
    for row in spark.read.parquet(str(victim)).select("source_partition", "source_offset").collect():
        held.setdefault(row.source_partition, []).append(row.source_offset)
    expected = {p: merge_ranges(OffsetRange(o, o + 1) for o in offsets) for p, offsets in held.items()}
    report_before = hour_report_path(clean["folder"] / "reports", "clean", H).read_text()
    victim.unlink()

    assert _cli(clean, gx_dir, "clean-sweep", "--sweep", real_log=True) == 0
    swept = json.loads((clean["folder"] / "clean-sweep.json").read_text())
    assert (swept["sweep"], swept["hours"]) == (True, ["2026-11-22T00:00:00Z", "2026-11-22T01:00:00Z"])
    assert {c["name"]: c["ran"] for c in swept["checks"]} == {
        "completeness": True,
        "retention": True,
        "gaps": False,
        "uniqueness": False,
        "late_and_quarantine": False,
        "stall": False,
        "decoding": False,
    }
    assert [(d["table"], d["operation"], d["kind"], d["hours"]) for d in swept["damage"]] == [
        ("events", "FILES MISSING", "files_missing", ["2026-11-22T01:00:00Z"])
    ]
    holes = {p["partition"]: p["holes"] for p in swept["partitions"] if p["holes"]}
    assert holes == {p: [[r.start, r.end] for r in spans] for p, spans in expected.items()}
    assert all(p["status"] == "HOLE" for p in swept["partitions"] if p["partition"] in expected)
    assert {r["partition"] for r in swept["recovery_requests"]} == set(expected)
    assert swept["paths"]["hour_reports"] == [], "the hour's full report stays the memory"
    assert hour_report_path(clean["folder"] / "reports", "clean", H).read_text() == report_before
    assert spark.conf.get("spark.sql.files.ignoreMissingFiles", "false") == "false", "the session is left as it was"


def test_the_command_line_refuses_bad_hours_and_missing_tables_with_status_2(clean, gx_dir, tmp_path, capsys):
    assert _cli(clean, gx_dir, "bad-hours", "--hours", "2026-11-22T01:30:00Z") == 2
    assert "--hours: 2026-11-22T01:30:00.000Z is not the start of an hour" in capsys.readouterr().err
    assert _cli(clean, gx_dir, "bad-hours", "--hours", "yesterday") == 2
    assert _cli(clean, gx_dir, "bad-sweep", "--sweep", "--hours", "2026-11-22T01:00:00Z") == 2
    assert "--sweep checks every sealed hour the source log still retains" in capsys.readouterr().err

    empty = _write_config(tmp_path, "clean", 3)
    code = quality_run.main(
        [
            "--stream",
            "clean",
            "--conf",
            str(empty),
            "--report-dir",
            str(tmp_path / "r"),
            "--gx-dir",
            str(gx_dir),
            "--run-name",
            "x",
        ]
    )
    assert code == 2
    assert f"stream 'clean': the events table does not exist at {tmp_path / 'lake' / 'clean' / 'events'}" in (
        capsys.readouterr().err
    )
    assert (
        quality_run.main(
            ["--stream", "nope", "--conf", str(empty), "--report-dir", "r", "--gx-dir", "g", "--run-name", "x"]
        )
        == 2
    )


def test_missing_tables_raise_a_clear_error_naming_stream_and_path(tmp_path, gx_dir):
    stream = load_stream(_write_config(tmp_path, "nothing_here", 2), "nothing_here")
    with pytest.raises(QualityTablesMissingError) as raised:
        run_quality(DeltaLakeFacts(stream), stream, [H], {0: Bounds(0, 10)}, NOW, tmp_path / "reports", gx_dir, "never")
    assert raised.value.path == str(tmp_path / "lake" / "nothing_here" / "events")
    assert str(raised.value).startswith(
        f"stream 'nothing_here': the events table does not exist at {raised.value.path}"
    )
    assert not (tmp_path / "reports").exists(), "nothing was reported"


def test_a_gx_project_of_before_with_its_spark_source_validates_pandas_frames_and_builds_docs_once(tmp_path):
    """A project folder written when the checks validated Spark frames (a Spark data source of the
    same name, as every deployed project has it) is taken over, not refused; Data Docs are built
    once, at the run's end."""
    import great_expectations as gx

    from expectations import stall
    from expectations.gx_project import DATA_SOURCE, GxProject
    from tidemark.log_position import KAFKA_OFFSETS

    gx.get_context(mode="file", project_root_dir=str(tmp_path)).data_sources.add_or_update_spark(DATA_SOURCE)
    project = GxProject(tmp_path)
    rows = [(0, 0, "OK", 3, 10, 10), (1, 1, "STOP", 3, 5, 10), (2, 2, "OK", 3, None, None)]
    outcome = project.validate("cases", stall.family(KAFKA_OFFSETS), rows, "taken-over")
    assert (outcome.rows, outcome.failed_rules, outcome.unexpected("reading_progresses")) == (
        3,
        ["reading_progresses"],
        (1,),
    )
    assert not project.data_docs_index.exists(), "Data Docs wait for the run's end"
    assert project.build_data_docs() == project.data_docs_index
    assert "cases.stall" in project.data_docs_index.read_text()
