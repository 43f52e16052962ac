"""The persist job's run summary: what one run of ``spark_jobs/persist/job.py --run-summary PATH`` did.

The job writes the file when it ends::

    {"stream": "telemetry", "mode": "available_now", "batches": 5,
     "global_watermark": "2026-11-22T03:59:29.999Z",
     "sealed_hours": ["2026-11-22T01:00:00Z", "2026-11-22T02:00:00Z"]}

``sealed_hours`` holds the start of every event-time hour [H, H+1h) newly sealed during the run,
UTC, ascending, possibly none. Pure Python (no Airflow import), so it is read and checked the same
way in the task and in unit tests.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

_HOUR = timedelta(hours=1)


class RunSummaryError(ValueError):
    """The run summary is missing or does not keep its contract; the message says which and why."""


@dataclass(frozen=True)
class RunSummary:
    """One persist run. Times are timezone-aware UTC datetimes.

    ``global_watermark`` is G at the end of the run, ``None`` while the stream has none yet (then
    ``sealed_hours`` is empty). Every hour H in ``sealed_hours`` satisfies the sealing rule
    G ≥ H + 1h + allowed_lateness.
    """

    stream: str
    global_watermark: datetime | None
    sealed_hours: tuple[datetime, ...]


def read_run_summary(path: str | Path, *, stream: str, allowed_lateness_ms: int) -> RunSummary:
    """Read and check the summary the persist job of ``stream`` wrote at ``path``.

    Raises ``RunSummaryError`` when the file is missing, is not JSON, names another stream, or
    lists an hour that is not an hour start, not ascending, or not sealed by the global watermark
    under ``allowed_lateness_ms`` (milliseconds).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RunSummaryError(
            f"run summary {path}: the persist job succeeded but wrote no run summary. The job must "
            "support --run-summary, and its driver must run where the task runs (spark-submit in "
            "client deploy mode), since the file is read from the task's local disk."
        ) from None
    return parse_run_summary(text, stream=stream, allowed_lateness_ms=allowed_lateness_ms, source=str(path))


def parse_run_summary(text: str, *, stream: str, allowed_lateness_ms: int, source: str = "<text>") -> RunSummary:
    """``read_run_summary`` on the file's text; ``source`` names it in error messages."""

    def fail(detail: str) -> RunSummaryError:
        return RunSummaryError(
            f"run summary {source}: {detail}; the persist job wrote a summary tidemark cannot trust."
        )

    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise fail(f"not valid JSON ({error})") from None
    if not isinstance(document, dict):
        raise fail(f"expected a JSON object, got {type(document).__name__}")
    if document.get("stream") != stream:
        raise fail(f"stream is {document.get('stream')!r}, expected {stream!r}")

    raw_watermark = document.get("global_watermark")
    global_watermark = None if raw_watermark is None else _utc_time(raw_watermark, "global_watermark", fail)

    raw_hours = document.get("sealed_hours")
    if not isinstance(raw_hours, list):
        raise fail(f"sealed_hours must be a list of UTC hour starts, got {raw_hours!r}")
    sealed_hours: list[datetime] = []
    for index, raw in enumerate(raw_hours):
        key = f"sealed_hours[{index}]"
        hour = _utc_time(raw, key, fail)
        if (hour.minute, hour.second, hour.microsecond) != (0, 0, 0):
            raise fail(f"{key}: {raw!r} is not the start of an hour")
        if sealed_hours and hour <= sealed_hours[-1]:
            raise fail(
                f"{key}: {raw!r} does not come after {format_hour(sealed_hours[-1])} (hours must ascend, once each)"
            )
        if global_watermark is None:
            raise fail(f"{key}: {raw!r} is listed as sealed but there is no global_watermark")
        seal_time = hour + _HOUR + timedelta(milliseconds=allowed_lateness_ms)
        if global_watermark < seal_time:
            raise fail(
                f"{key}: {raw!r} is not sealed yet: the global watermark {format_watermark(global_watermark)} "
                f"is before {format_watermark(seal_time)} (hour end + allowed lateness)"
            )
        sealed_hours.append(hour)
    return RunSummary(stream=stream, global_watermark=global_watermark, sealed_hours=tuple(sealed_hours))


def format_hour(hour: datetime) -> str:
    """An hour start as ``2026-11-22T01:00:00Z``."""
    return hour.astimezone(UTC).strftime("%Y-%m-%dT%H:00:00Z")


def format_watermark(moment: datetime) -> str:
    """A watermark as ``2026-11-22T03:59:29.999Z`` (milliseconds, UTC)."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _utc_time(raw: object, key: str, fail) -> datetime:
    # ISO-8601 with an explicit UTC offset only: a time without one would have to be guessed.
    if not isinstance(raw, str):
        raise fail(f"{key} must be an ISO-8601 UTC time string, got {raw!r}")
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise fail(f"{key}: {raw!r} is not an ISO-8601 time") from None
    if moment.utcoffset() != timedelta(0):
        raise fail(f"{key}: {raw!r} is not in UTC (write it with a trailing Z)")
    return moment.astimezone(UTC)
