"""An error as one line of a log, for the Spark-free looks that answer "run the job, because ...":
delta-rs's errors run to many lines, with terminal colours and the whole signed request of a
refused S3 call."""

from __future__ import annotations

from tidemark.failure_line import failure_line


def one_line(error: Exception, most: int = 300) -> str:
    """``<ErrorType>: <why>`` (tidemark.failure_line), at most ``most`` characters."""
    return failure_line(type(error).__name__, str(error), most)
