"""An error as one line of a log, for the Spark-free looks that answer "run the job, because ...":
delta-rs's errors run to many lines, with terminal colours and the whole signed request of a
refused S3 call."""

from __future__ import annotations

import re


def one_line(error: Exception, most: int = 300) -> str:
    """``<ErrorType>: <its first line>``, colours removed, at most ``most`` characters."""
    lines = re.sub(r"\x1b\[[0-9;]*m", "", str(error)).strip().splitlines()
    first = lines[0].strip() if lines else ""
    text = f"{type(error).__name__}: {first}" if first else type(error).__name__
    return text if len(text) <= most else text[: most - 1] + "…"
