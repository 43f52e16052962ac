"""A text stream that writes through to another and keeps what was written: a runner of several
streams (a family's persist driver, a family's quality checks) shows each member's error lines
as always and keeps the last one as that member's outcome."""

from __future__ import annotations

import io


class KeptOutput(io.TextIOBase):
    """Writes through to ``target`` (e.g. sys.stderr) and keeps a copy."""

    def __init__(self, target):
        self._target = target
        self._kept = io.StringIO()

    def write(self, text: str) -> int:
        self._kept.write(text)
        return self._target.write(text)

    def flush(self) -> None:
        self._target.flush()

    def last_line(self) -> str | None:
        """The last line written that is not blank; None when there is none."""
        lines = [line for line in self._kept.getvalue().splitlines() if line.strip()]
        return lines[-1] if lines else None
