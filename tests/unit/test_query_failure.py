"""A registry outage told from the error Spark raises on the driver (the worker's exception type
is lost on the way): one line and exit 1 for it, every other error raised as it was."""

from __future__ import annotations

import pytest

from spark_jobs.registry_outage import exit_for_outage, registry_outage
from tidemark.writer_schemas import RegistryUnavailableError

# The tail of what Spark raises on the driver when a Python worker failed (abridged).
SPARK_ERROR = """[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided function.
  File "/work/tidemark/record_decoder.py", line 96, in decode
    return self._decode(value, read_time_ms)
tidemark.writer_schemas.RegistryUnavailableError: the schema registry at http://r:8081 did not answer (Connection refused) for schema 3, for 2 s: the batch fails and is retried, nothing is quarantined
"""


def test_the_workers_line_is_found_in_sparks_error_and_said_in_one_line(capsys):
    error = RuntimeError(SPARK_ERROR)
    assert registry_outage(error).startswith("the schema registry at http://r:8081 did not answer")
    assert registry_outage(RegistryUnavailableError("down")) == "down"
    assert exit_for_outage("persist", "telemetry", error) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("persist: stream 'telemetry': the schema registry at http://r:8081 did not answer")


def test_any_other_error_is_raised_as_it_was():
    error = RuntimeError("Task failed: java.lang.OutOfMemoryError")
    assert registry_outage(error) is None
    with pytest.raises(RuntimeError, match="OutOfMemoryError"):
        exit_for_outage("persist", "telemetry", error)
