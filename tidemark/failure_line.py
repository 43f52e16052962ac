"""The one line that says why something failed, out of an error's text.

A Spark streaming query that fails inside tidemark's Python code (its data source, its batch
function) raises a StreamingQueryException whose first line names only the query
("[STREAM_FAILED] Query [id = ...] terminated with exception: ... Traceback (most recent call
last):"); the reason is the Python exception at the end of the traceback Spark carries in the
text. A verdict, an alarm or a family driver's result needs that line, not the first."""

from __future__ import annotations

import re

TRACEBACK = "Traceback (most recent call last):"
_COLOURS = re.compile(r"\x1b\[[0-9;]*m")
# "cimpl.KafkaException: ..." -> "KafkaException: ...": the module path says nothing to a reader.
_DOTTED_TYPE = re.compile(r"^[A-Za-z_][\w.]*\.([A-Za-z_]\w*): ")


def failure_line(type_name: str, text: str, most: int = 300) -> str:
    """``<ErrorType>: <reason>`` in one line of at most ``most`` characters, terminal colours
    removed. ``type_name``/``text``: the error's type name and its text (``str(error)``). When
    the text holds Python tracebacks, the reason is the exception line of the last one (the
    first unindented line after its frames); otherwise the text's first line."""
    lines = _COLOURS.sub("", text).splitlines()
    # Spark puts the traceback's first line at the end of its own message's line.
    starts = [i for i, line in enumerate(lines) if line.rstrip().endswith(TRACEBACK)]
    if starts:
        raised = next((line.strip() for line in lines[starts[-1] + 1 :] if line.strip() and line[0] not in " \t"), "")
        if raised:
            return _cut(_DOTTED_TYPE.sub(r"\1: ", raised), most)
    first = next((line.strip() for line in lines if line.strip()), "")
    return _cut(f"{type_name}: {first}" if first else type_name, most)


def _cut(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"
