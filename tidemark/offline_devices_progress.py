"""Whether a live run of the offline-device detector has a sealed hour to read, decided without Spark.

The detector (spark_jobs/offline_devices) reads sealed event time in slices up to the sealed
horizon, the end of the last sealed hour; its streaming checkpoint records, per micro-batch, the
end of the slice read (``until_ms``, everything before it read) and the watermark the batch ran
under. A live available_now run plans no slice when ``until_ms`` of its last batch is at or past
the horizon (the source's own rule: ``SealedEventsReader.latestOffset``), and Spark runs no
timer-only batch when that batch's watermark already passed every record read (the last slice's
end marker sits at ``until_ms - 1``). Then the run reads nothing, fires no timer and writes no
period: it can end before Spark starts.

It answers "nothing new" only when it is sure. Anything it cannot judge runs the job: a
checkpoint with no batch yet (the first run), a batch planned and not committed (the job replays
it), a last batch whose timers have not fired, a seals table that holds no hour while the
detector has read some (a lake replaced under it).
"""

from __future__ import annotations

from dataclasses import dataclass

from tidemark.event_time_text import format_event_time, format_optional_event_time


@dataclass(frozen=True)
class DetectorProgress:
    """Where the live detector's checkpoint leaves it: its last planned micro-batch ``batch_id``,
    whether that batch is ``committed``, ``read_until_ms`` (the end of the slice it read, None when
    it read none), and ``watermark_ms``, the event-time watermark the batch ran under (None: none
    yet). Times in ms since the epoch, UTC."""

    batch_id: int
    committed: bool
    read_until_ms: int | None
    watermark_ms: int | None


@dataclass(frozen=True)
class SealedHoursLook:
    """The answer: ``nothing_new`` and the one sentence that says why (or what there is to do);
    the sealed horizon and the detector's read end it compared (None: not known)."""

    nothing_new: bool
    reason: str
    sealed_horizon_ms: int | None = None
    read_until_ms: int | None = None


def look_for_sealed_hours(sealed_horizon_ms: int | None, progress: DetectorProgress | None) -> SealedHoursLook:
    """Whether a live available_now run of the detector would read a slice or fire a timer.

    ``sealed_horizon_ms``: the end of the stream's last sealed hour (last ``hour`` of the seals
    table + 1 h; None: nothing sealed). ``progress``: the checkpoint's last batch (None: the
    checkpoint holds no batch). Never says "nothing new" when the run could write a period.
    """
    if progress is None:
        return SealedHoursLook(False, "the detector's checkpoint holds no batch yet: its first run starts the stream")
    if not progress.committed:
        return SealedHoursLook(
            False, f"the detector's batch {progress.batch_id} is planned, not committed: the job replays it"
        )
    if progress.read_until_ms is None:
        return SealedHoursLook(False, f"the detector's batch {progress.batch_id} read no slice yet")
    read_until = format_event_time(progress.read_until_ms)
    if progress.watermark_ms is None or progress.watermark_ms < progress.read_until_ms - 1:
        return SealedHoursLook(
            False,
            f"the detector read up to {read_until} but its watermark is {format_optional_event_time(progress.watermark_ms) or 'none'}: "
            "the timers of the last slice have not fired",
        )
    if sealed_horizon_ms is None:
        return SealedHoursLook(False, f"the seals table holds no sealed hour, yet the detector read up to {read_until}")
    if sealed_horizon_ms > progress.read_until_ms:
        return SealedHoursLook(
            False,
            f"hours are sealed up to {format_event_time(sealed_horizon_ms)}, the detector read up to {read_until}",
        )
    return SealedHoursLook(
        True,
        f"sealed horizon {format_event_time(sealed_horizon_ms)} already read by the detector's last run "
        f"(batch {progress.batch_id}, read up to {read_until}, its timers fired)",
        sealed_horizon_ms,
        progress.read_until_ms,
    )


# The periods table's property that says which version of the stream's erasures table its rows
# and the detector's state were built from (spark_jobs.offline_devices.erasure_rebuild).
ERASURES_BUILT_FROM = "tidemark.erasures_version"


def erasures_to_forget(erasures_version: int | None, built_from: int | None) -> bool:
    """Whether the detector holds records erased since it was built: the stream's erasures table
    (None: no erasure ever) has a version its periods and state were not rebuilt from (None: built
    before any erasure). An erasure removes records from the sealed events the detector read, so
    only a rebuild from the lake as it is now forgets them (the detector is replayable)."""
    return erasures_version is not None and (built_from is None or erasures_version > built_from)
