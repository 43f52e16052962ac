"""Many streams at a glance: one line per stream, its worst partition's quality status and lag as
its last quality check found them (tidemark.quality_look.LastCheck), worst first. The watermark
page's index and ``tidemark status`` without a stream show these; a stream's own page shows its
partitions live."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from tidemark.quality_look import LastCheck, read_last_check
from tidemark.quality_status import QualityStatus

# Ranked above every status: a stream never checked is the first thing to look at after a problem.
NOT_CHECKED = "NOT CHECKED"


@dataclass(frozen=True)
class StreamGlance:
    """One stream's line: ``status`` its worst partition's (NOT_CHECKED without a completed check),
    ``partition`` and ``lag`` that partition's (None when unknown), ``reason`` the sentence behind
    the status, ``checked_at_ms`` when (UTC ms; None: never), ``family`` its family (None)."""

    stream: str
    family: str | None
    status: str
    partition: int | None
    lag: int | None
    partitions: int
    reason: str
    checked_at_ms: int | None

    @property
    def severity(self) -> int:
        """0 for OK up to 6 for LOST; 7 for a stream never checked."""
        if self.status == NOT_CHECKED:
            return len(QualityStatus)
        return QualityStatus(self.status).severity

    def matches(self, text: str) -> bool:
        """Whether ``text`` (case-insensitive) is in the stream's name, family or status."""
        wanted = text.strip().lower()
        return not wanted or any(wanted in (value or "").lower() for value in (self.stream, self.family, self.status))


def glance(stream: str, family: str | None, last: LastCheck | None) -> StreamGlance:
    if last is None:
        return StreamGlance(stream, family, NOT_CHECKED, None, None, 0, "no quality check has completed yet", None)
    if last.worst is None:
        return StreamGlance(
            stream, family, QualityStatus.OK.value, None, None, 0, "no partition yet", last.checked_at_ms
        )
    worst = last.worst
    return StreamGlance(
        stream, family, worst.status, worst.partition, worst.lag, last.partitions, worst.reason, last.checked_at_ms
    )


def worst_first(glances: Iterable[StreamGlance]) -> list[StreamGlance]:
    """Worst status first, then the largest lag, then by name."""
    return sorted(glances, key=lambda g: (-g.severity, -(g.lag or 0), g.stream))


def stream_glances(families: Mapping[str, str | None], report_dir: str | Path, text: str = "") -> list[StreamGlance]:
    """The line of every stream in ``families`` (stream name -> its family or None) that matches
    ``text``, worst first, from each stream's memory under ``report_dir``."""
    lines = (glance(name, family, read_last_check(report_dir, name)) for name, family in families.items())
    return worst_first(line for line in lines if line.matches(text))
