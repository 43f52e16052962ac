"""The offline-device processor under TwsTester (in memory, no JVM), fed the way Spark feeds it.

The seed sequence (one scooter: 17:30:15, 17:30:20, 17:30:25, 18:00:32) must give offline at
18:00:25 and online at 18:00:32 however the records are cut into micro-batches. A processor that
acts on each record as it arrives (the naive one below, as the Flink job of the seed article was
first written) gives that only when a watermark past 18:00:25 happens to fire the deadline before
18:00:32 is handled; the tests show it does not in a backfill, so they can tell the two apart.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pytest
from pyspark.errors.exceptions.base import IllegalArgumentException
from pyspark.sql.streaming.stateful_processor import StatefulProcessor
from pyspark.sql.streaming.tws_tester import TwsTester

from spark_jobs.offline_devices.processor import OfflineDeviceProcessor

MINUTE = 60_000
SECOND = 1000
OFFLINE_AFTER = 30 * MINUTE


def at(hh_mm_ss: str) -> int:
    """A time of 2026-11-21 (UTC) as ms since the epoch."""
    moment = datetime.strptime(f"2026-11-21 {hh_mm_ss}", "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


SEED = [at("17:30:15"), at("17:30:20"), at("17:30:25"), at("18:00:32")]
SEED_PERIODS = {("scooter-7", at("18:00:25"), at("18:00:32"))}


def slices_of(records: list[int], start_ms: int, end_ms: int, slice_ms: int) -> list[tuple[list[int], int]]:
    """The records cut into event-time slices [t, t + slice_ms) from start_ms to end_ms, as the
    sealed-events source reads them: (records of the slice, slice end)."""
    return [
        ([r for r in records if begin <= r < begin + slice_ms], min(begin + slice_ms, end_ms))
        for begin in range(start_ms, end_ms, slice_ms)
    ]


def run_like_spark(processor: StatefulProcessor, device: str, slices, no_data_batches: bool) -> list[tuple]:
    """Feed ``slices`` ([(records, slice end)], ascending) the way Spark runs them.

    Micro-batch k handles its rows first, then fires the timers at or before the watermark of
    batch k-1; its own slice-end marker then moves the watermark to its slice end - 1 ms. With
    ``no_data_batches``, a batch without rows follows every slice and fires what that watermark
    unlocked (live: the next slice is not sealed yet); without, the next slice follows at once (a
    backfill over a backlog). After the last slice a batch without rows always runs (availableNow
    does run it). Returns the output rows, in order, as (device, offline_at, online_at).
    (TwsTester fires timers when the watermark is set, so the watermark a batch's rows see is
    the one before; only the processors' timer handlers read the watermark.)
    """
    tester = TwsTester(processor, timeMode="EventTime", eventTimeExtractor=lambda row: row["event_time_ms"])
    out: list[pd.DataFrame] = []
    current = 0

    def fire(watermark):
        nonlocal current
        if watermark is not None and watermark > current:
            out.append(tester.setWatermark(watermark))
            current = watermark

    watermark = None
    for records, end in slices:
        if records:
            out.append(tester.testInPandas(device, pd.DataFrame({"event_time_ms": records})))
        fire(watermark)
        watermark = end - 1
        if no_data_batches:
            fire(watermark)
    fire(watermark)
    rows = pd.concat([frame for frame in out if len(frame)], ignore_index=True) if any(len(f) for f in out) else None
    if rows is None:
        return []
    return [
        (r.device_id, int(r.offline_at_ms), None if pd.isna(r.online_at_ms) else int(r.online_at_ms))
        for r in rows.itertuples()
    ]


def as_table(rows: list[tuple]) -> set[tuple]:
    """The output rows folded as the MERGE into the output table folds them: key (device,
    offline_at), online_at set once it is known."""
    table: dict[tuple, int | None] = {}
    for device, offline_at, online_at in rows:
        table[(device, offline_at)] = online_at if online_at is not None else table.get((device, offline_at))
    return {(device, offline_at, online_at) for (device, offline_at), online_at in table.items()}


class NaiveOfflineProcessor(StatefulProcessor):
    """The unbuffered detector, for contrast: each record is handled as it arrives (online again
    if offline; the offline deadline moved to record + 30 min), the deadline when its timer fires."""

    def init(self, handle) -> None:
        self._handle = handle
        self._state = handle.getValueState("state", "last_ms LONG, offline_at_ms LONG")

    def handleInputRows(self, key, rows, timerValues):
        last, offline_at = self._state.get() if self._state.exists() else (None, None)
        out = []
        for record in sorted(int(t) for frame in rows for t in frame["event_time_ms"]):
            if offline_at is not None:
                out.append((key[0], offline_at, record))
                offline_at = None
            elif last is not None:
                self._handle.deleteTimer(last + OFFLINE_AFTER)
            self._handle.registerTimer(record + OFFLINE_AFTER)
            last = record
        self._state.update((last, offline_at))
        if out:
            yield pd.DataFrame(out, columns=["device_id", "offline_at_ms", "online_at_ms"])

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        last, _ = self._state.get()
        deadline = expiredTimerInfo.getExpiryTimeInMs()
        if deadline == last + OFFLINE_AFTER:
            self._state.update((last, deadline))
            yield pd.DataFrame(
                {"device_id": [key[0]], "offline_at_ms": [deadline], "online_at_ms": pd.array([None], dtype="Int64")}
            )


LIVE = slices_of(SEED, at("17:30:00"), at("18:15:00"), 5 * SECOND)  # fine slices, sealed one by one
BACKFILL = slices_of(SEED, at("17:00:00"), at("18:15:00"), 75 * MINUTE)  # the whole range at once


def test_the_seed_sequence_gives_the_same_periods_in_one_batch_and_in_many():
    live = run_like_spark(OfflineDeviceProcessor(OFFLINE_AFTER), "scooter-7", LIVE, no_data_batches=True)
    backfill = run_like_spark(OfflineDeviceProcessor(OFFLINE_AFTER), "scooter-7", BACKFILL, no_data_batches=False)
    assert as_table(live) == as_table(backfill) == SEED_PERIODS
    # Live reports the period when it begins, then its end; the backfill sees both at once.
    assert live == [("scooter-7", at("18:00:25"), None), ("scooter-7", at("18:00:25"), at("18:00:32"))]
    assert backfill == [("scooter-7", at("18:00:25"), at("18:00:32"))]


@pytest.mark.parametrize("slice_ms", [SECOND, 5 * SECOND, MINUTE, 15 * MINUTE, 45 * MINUTE])
@pytest.mark.parametrize("no_data_batches", [True, False])
def test_the_result_does_not_depend_on_slice_length_or_on_batches_without_data(slice_ms, no_data_batches):
    slices = slices_of(SEED, at("17:30:00"), at("18:15:00"), slice_ms)
    rows = run_like_spark(OfflineDeviceProcessor(OFFLINE_AFTER), "scooter-7", slices, no_data_batches)
    assert as_table(rows) == SEED_PERIODS


def test_one_record_per_batch_gives_the_same_periods():
    # Each batch ends right after its record; a silent slice runs to 18:00:30 in between.
    ends = [at("17:30:15") + 1, at("17:30:20") + 1, at("17:30:25") + 1, at("18:00:30"), at("18:00:32") + 1]
    slices, begin = [], at("17:30:00")
    for end in ends:
        slices.append(([r for r in SEED if begin <= r < end], end))
        begin = end
    rows = run_like_spark(OfflineDeviceProcessor(OFFLINE_AFTER), "scooter-7", slices, no_data_batches=False)
    assert as_table(rows) == SEED_PERIODS


def test_the_naive_processor_depends_on_batching_so_these_tests_can_tell():
    live = run_like_spark(NaiveOfflineProcessor(), "scooter-7", LIVE, no_data_batches=True)
    backfill = run_like_spark(NaiveOfflineProcessor(), "scooter-7", BACKFILL, no_data_batches=False)
    assert as_table(live) == SEED_PERIODS
    # In one batch the 18:00:32 record moves the deadline to 18:30:32 before the 18:00:25 timer
    # can fire: the offline period is lost, as in the seed article's backfills.
    assert as_table(backfill) == set()
    # And with the data-driven watermark alone (no silent slice between 18:00:25 and 18:00:32),
    # even a batch per record loses it.
    per_record = [([r], r + 1) for r in SEED]
    assert as_table(run_like_spark(NaiveOfflineProcessor(), "scooter-7", per_record, no_data_batches=True)) == set()


def test_a_device_still_offline_at_the_end_is_reported_open_and_closed_by_its_next_record():
    processor = OfflineDeviceProcessor(OFFLINE_AFTER)
    first = slices_of([at("10:00:00")], at("10:00:00"), at("11:00:00"), 15 * MINUTE)
    rows = run_like_spark(processor, "scooter-1", first, no_data_batches=True)
    assert rows == [("scooter-1", at("10:30:00"), None)]


def test_a_record_exactly_offline_after_later_keeps_the_device_online():
    # 10:00 → 10:30 → 11:00: gaps of exactly 30 min; 11:00 → 11:30:01: one second more.
    records = [at("10:00:00"), at("10:30:00"), at("11:00:00"), at("11:30:01")]
    slices = slices_of(records, at("10:00:00"), at("11:45:00"), 5 * MINUTE)
    rows = run_like_spark(OfflineDeviceProcessor(OFFLINE_AFTER), "d", slices, no_data_batches=True)
    assert as_table(rows) == {("d", at("11:30:00"), at("11:30:01"))}


def test_a_backfill_warm_up_reports_no_period_that_began_before_its_start():
    # Records from 09:00; the backfill reports from 10:00: the 09:40 period (09:10 + 30 min) is
    # the warm-up's, the 10:20 one (09:50 + 30 min) is reported.
    records = [at("09:00:00"), at("09:10:00"), at("09:45:00"), at("09:50:00"), at("10:30:00")]
    slices = slices_of(records, at("09:00:00"), at("11:00:00"), 30 * MINUTE)
    everything = as_table(run_like_spark(OfflineDeviceProcessor(OFFLINE_AFTER), "d", slices, no_data_batches=True))
    warm_up = OfflineDeviceProcessor(OFFLINE_AFTER, report_from_ms=at("10:00:00"))
    reported = as_table(run_like_spark(warm_up, "d", slices, no_data_batches=True))
    assert everything == {("d", at("09:40:00"), at("09:45:00")), ("d", at("10:20:00"), at("10:30:00"))}
    assert reported == {("d", at("10:20:00"), at("10:30:00"))}


def _tester(processor: StatefulProcessor) -> TwsTester:
    return TwsTester(processor, timeMode="EventTime", eventTimeExtractor=lambda row: row["event_time_ms"])


def test_input_rows_are_only_buffered_and_handled_once_the_watermark_passes_them():
    tester = _tester(OfflineDeviceProcessor(OFFLINE_AFTER))
    # The slice-end marker (no device) only moves the watermark: no output, no state.
    assert tester.testInPandas(None, pd.DataFrame({"event_time_ms": [at("10:14:59")]})).empty
    assert tester.peekListState("pending", None) == []
    # Records at the same instant are one observation.
    assert tester.testInPandas(
        "d", pd.DataFrame({"event_time_ms": [at("10:00:00"), at("10:00:00"), at("10:05:00")]})
    ).empty
    assert tester.peekListState("pending", "d") == [(at("10:00:00"),), (at("10:00:00"),), (at("10:05:00"),)]
    assert tester.peekValueState("timeline", "d") is None
    assert tester.setWatermark(at("10:14:59")).empty
    assert tester.peekListState("pending", "d") == []
    assert tester.peekValueState("timeline", "d") == (at("10:05:00"), None)
    # Then the offline deadline, 10:35, is the next thing due.
    assert tester.setWatermark(at("10:34:59")).empty
    rows = tester.setWatermark(at("10:35:00"))
    assert list(rows.itertuples(index=False, name=None)) == [("d", at("10:35:00"), pd.NA)]


def test_a_timer_is_never_registered_at_or_before_the_watermark():
    # TwsTester refuses such a timer (IllegalArgumentException), as it would never fire; the
    # processor never asks for one, also when a record comes at its deadline's very instant.
    tester = _tester(OfflineDeviceProcessor(OFFLINE_AFTER))
    tester.testInPandas("d", pd.DataFrame({"event_time_ms": [at("10:00:00")]}))
    tester.setWatermark(at("10:29:59"))
    tester.testInPandas("d", pd.DataFrame({"event_time_ms": [at("10:30:00")]}))
    rows = tester.setWatermark(at("11:00:00"))
    assert [
        (int(r.offline_at_ms), None if pd.isna(r.online_at_ms) else int(r.online_at_ms)) for r in rows.itertuples()
    ] == [(at("11:00:00"), None)]
    with pytest.raises(IllegalArgumentException):
        tester.handle.registerTimer(at("11:00:00"))
