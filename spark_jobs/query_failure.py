"""A schema registry that was down while a batch decoded (or a writer schema the running job has
no column for), told from the error Spark raises.

A Python worker's exception reaches the driver as Spark's own error, its type gone and the
worker's traceback in its message: there is no typed channel back. ``registry_outage`` finds the
worker's tidemark.writer_schemas.RegistryUnavailableError line in it, so a job can end in one
line that says the registry was away (and that nothing was quarantined or skipped) instead of
two hundred lines of traceback; any other failure is not recognised and stays as it was.
"""

from __future__ import annotations

import re
import sys

from tidemark.writer_schemas import RegistryUnavailableError, SchemaChangedError

# The errors that fail a batch without it being any record's fault: a registry away, and a
# writer schema with a field the running job has no column for yet (the next run adds it).
_BATCH_FAILURES = (RegistryUnavailableError, SchemaChangedError)
_LINE = re.compile(
    rf"{re.escape(RegistryUnavailableError.__module__)}\.(?:{'|'.join(e.__name__ for e in _BATCH_FAILURES)}): ([^\n]+)"
)


def registry_outage(error: BaseException) -> str | None:
    """The registry's message when ``error`` (or its cause) is a batch failed by a registry outage, else None."""
    while error is not None:
        if isinstance(error, _BATCH_FAILURES):
            return str(error)
        found = _LINE.search(str(error))
        if found:
            return found.group(1).strip()
        error = error.__cause__
    return None


def exit_for_outage(job: str, stream: str, error: BaseException) -> int:
    """A job's exit status for ``error``: 1 with one line on stderr when it is a registry outage
    or a writer schema the running job has no column for (transient: Airflow's retry runs the
    job again, and the failed batch left nothing behind); 2 with one line when the stream's
    registry schema changed in a way its table cannot follow (tidemark.schema_evolution: a
    person decides); any other error is raised again, as it was."""
    from tidemark.schema_evolution import SchemaEvolutionError

    if isinstance(error, SchemaEvolutionError):
        print(f"{job}: stream {stream!r}: {error}", file=sys.stderr)
        return 2
    outage = registry_outage(error)
    if outage is None:
        raise error
    print(f"{job}: stream {stream!r}: {outage}", file=sys.stderr)
    return 1
