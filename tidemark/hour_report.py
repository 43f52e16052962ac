"""What the quality checks found for one sealed hour: the file a quality run writes per checked hour,
``<report_dir>/<stream>/hours/<YYYY-MM-DDTHH>Z.json`` (expectations.checked_hours), which is also
the memory of which hours were checked. One Struct, written by ``write_hour_report`` and read back
by ``read_hour_report`` -- by the quality run reconciling its sealed hours, the tests and anyone
reading the file -- never by string keys.

Units: ``*_ms`` are milliseconds since the epoch, UTC; ``hour`` is the ISO-8601 start of the
event-time hour [hour, hour+1h). ``partitions`` and ``damage`` are the quality summary's own parts
(tidemark.quality_summary): the hour's figures per partition, and the commits of the lake's Delta
log that sent the hour back to be checked.

Compatibility: ``damage`` came after the first reports and defaults to none; fields this type does
not know are ignored, so older and newer files both read. A file that cannot be read raises
``HourReportUnreadable`` naming the file and the field.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from tidemark.quality_summary import HourSummary, LakeDamageSummary
from tidemark.typed_file import write_typed_file


class HourReport(msgspec.Struct, frozen=True, kw_only=True):
    """Hour ``hour`` (``hour_ms``) of ``stream`` as the quality run ``run_name`` checked it at
    ``checked_at_ms``: ``success`` when no partition failed a check, the figures per partition,
    the damage that sent the hour back, and the run's summary.html. ``sealed_at_ms`` is the
    newest ``sealed_at`` the seals table held for the hour when it was checked (None: unknown);
    a newer seal means the hour was amended after the check, and reconciling checks it again."""

    stream: str
    hour: str
    hour_ms: int
    run_name: str
    checked_at_ms: int
    sealed_at_ms: int | None
    success: bool
    partitions: tuple[HourSummary, ...]
    damage: tuple[LakeDamageSummary, ...] = ()
    summary_html: str


class HourReportUnreadable(ValueError):
    """An hour report could not be read; the message names the file and says why."""


def write_hour_report(path: str | Path, report: HourReport) -> None:
    """Write atomically: a reader (or a crash) never sees half a report."""
    write_typed_file(path, report, atomic=True)


def read_hour_report(path: str | Path) -> HourReport:
    """The report in ``path``; HourReportUnreadable naming the file when it is missing or not one."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise HourReportUnreadable(f"{path}: cannot read the hour report ({error.strerror or error})") from None
    return decode_hour_report(data, path)


def decode_hour_report(data: bytes, path: str | Path) -> HourReport:
    """The report in ``data``, read from ``path``; HourReportUnreadable naming it when it is not one."""
    try:
        return msgspec.json.decode(data, type=HourReport)
    except msgspec.DecodeError as error:
        raise HourReportUnreadable(f"{path} is not an hour report tidemark can read ({error})") from None
