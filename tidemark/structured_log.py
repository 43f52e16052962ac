"""Structured logs: one JSON object per line, for every process tidemark runs (the Spark jobs,
the quality run).

A record logged with a dict as its message (``log.info({"event": "batch_persisted", ...})``) is
merged into the line; any other message (py4j's, Spark's Python side, a library's) becomes
``"msg"``, so every line parses. A record with an exception (``log.exception``) carries its
reason in one line as ``"error"`` (tidemark.failure_line: for a failed Spark query, the Python
exception inside it) and the whole traceback as ``"traceback"``. Values JSON cannot hold are
written as their ``str()``. Nothing
here ever logs configuration values that could hold credentials: callers log events and figures.
"""

from __future__ import annotations

import json
import logging

from tidemark.failure_line import failure_line


class JsonLineFormatter(logging.Formatter):
    """``{"level", "logger", **the dict message}`` or ``{"level", "logger", "msg"}``, one line;
    with ``"error"`` and ``"traceback"`` when the record carries an exception."""

    def format(self, record: logging.LogRecord) -> str:
        line = {"level": record.levelname, "logger": record.name}
        if isinstance(record.msg, dict):
            line.update(record.msg)
        else:
            line["msg"] = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            line["error"] = failure_line(type(error).__name__, str(error))
            line["traceback"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def configure_json_logging(level: int = logging.INFO) -> None:
    """Every line of the process on stderr as one JSON object, at ``level`` and above."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonLineFormatter())
    logging.basicConfig(level=level, handlers=[handler], force=True)
    # py4j logs every callback from the JVM at INFO ("Received command c on object id p0"): one
    # line per micro-batch that tells a person reading the task log nothing.
    logging.getLogger("py4j").setLevel(logging.WARNING)
