"""The persist job's run summary as the persist task reads it: the file ``spark_jobs/persist/job.py
--run-summary PATH`` writes, decoded as its one type (tidemark.persist_run_summary.PersistRunSummary),
then checked for what the type cannot say.

``sealed_hours`` holds the start of every event-time hour [H, H+1h) newly sealed during the run,
UTC, ascending, possibly none. Pure Python (no Airflow import), so it is read and checked the same
way in the task and in unit tests.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from tidemark.persist_run_summary import PersistRunSummary, RunSummaryError

__all__ = [
    "RunSummaryError",
    "check_run_summary",
    "format_hour",
    "format_watermark",
    "parse_run_summary",
    "read_run_summary",
    "summary_times",
]

_HOUR = timedelta(hours=1)


def read_run_summary(path: str | Path, *, stream: str, allowed_lateness_ms: int) -> PersistRunSummary:
    """Read and check the summary the persist job of ``stream`` wrote at ``path``.

    Raises ``RunSummaryError`` naming the file when it is missing, is not a run summary (not
    JSON, a field missing or of the wrong type), names another stream, or lists an hour that is
    not an hour start, not ascending, or not sealed by the global watermark under
    ``allowed_lateness_ms`` (milliseconds).
    """
    summary = PersistRunSummary.read(path)
    return check_run_summary(summary, stream=stream, allowed_lateness_ms=allowed_lateness_ms, source=str(path))


def parse_run_summary(
    text: str | bytes, *, stream: str, allowed_lateness_ms: int, source: str = "<text>"
) -> PersistRunSummary:
    """``read_run_summary`` on the file's text; ``source`` names it in error messages."""
    summary = PersistRunSummary.decode(text, source=source)
    return check_run_summary(summary, stream=stream, allowed_lateness_ms=allowed_lateness_ms, source=source)


def check_run_summary(
    summary: PersistRunSummary, *, stream: str, allowed_lateness_ms: int, source: str
) -> PersistRunSummary:
    """``summary`` when it keeps the contract a Struct cannot express (its stream, UTC times,
    hour starts ascending once each, each sealed by the global watermark); else RunSummaryError."""

    def fail(detail: str) -> RunSummaryError:
        return RunSummaryError(
            f"run summary {source}: {detail}; the persist job wrote a summary tidemark cannot trust."
        )

    if summary.stream != stream:
        raise fail(f"stream is {summary.stream!r}, expected {stream!r}")
    global_watermark, sealed_hours = _times(summary, fail)
    for index, (raw, hour) in enumerate(zip(summary.sealed_hours, sealed_hours)):
        key = f"sealed_hours[{index}]"
        if (hour.minute, hour.second, hour.microsecond) != (0, 0, 0):
            raise fail(f"{key}: {raw!r} is not the start of an hour")
        if index and hour <= sealed_hours[index - 1]:
            raise fail(
                f"{key}: {raw!r} does not come after {format_hour(sealed_hours[index - 1])} (hours must ascend, once each)"
            )
        if global_watermark is None:
            raise fail(f"{key}: {raw!r} is listed as sealed but there is no global_watermark")
        seal_time = hour + _HOUR + timedelta(milliseconds=allowed_lateness_ms)
        if global_watermark < seal_time:
            raise fail(
                f"{key}: {raw!r} is not sealed yet: the global watermark {format_watermark(global_watermark)} "
                f"is before {format_watermark(seal_time)} (hour end + allowed lateness)"
            )
    return summary


def summary_times(summary: PersistRunSummary) -> tuple[datetime | None, tuple[datetime, ...]]:
    """(G, the sealed hours) of a checked summary as timezone-aware UTC datetimes."""

    def fail(detail: str) -> RunSummaryError:
        return RunSummaryError(f"run summary of stream {summary.stream!r}: {detail}")

    return _times(summary, fail)


def format_hour(hour: datetime) -> str:
    """An hour start as ``2026-11-22T01:00:00Z``."""
    return hour.astimezone(UTC).strftime("%Y-%m-%dT%H:00:00Z")


def format_watermark(moment: datetime) -> str:
    """A watermark as ``2026-11-22T03:59:29.999Z`` (milliseconds, UTC)."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _times(summary: PersistRunSummary, fail) -> tuple[datetime | None, tuple[datetime, ...]]:
    raw_watermark = summary.global_watermark
    global_watermark = None if raw_watermark is None else _utc_time(raw_watermark, "global_watermark", fail)
    hours = tuple(_utc_time(raw, f"sealed_hours[{i}]", fail) for i, raw in enumerate(summary.sealed_hours))
    return global_watermark, hours


def _utc_time(raw: str, key: str, fail) -> datetime:
    # ISO-8601 with an explicit UTC offset only: a time without one would have to be guessed.
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise fail(f"{key}: {raw!r} is not an ISO-8601 time") from None
    if moment.utcoffset() != timedelta(0):
        raise fail(f"{key}: {raw!r} is not in UTC (write it with a trailing Z)")
    return moment.astimezone(UTC)
