"""How a job ends when its work failed inside tidemark's Python code that Spark runs (the log
source, a batch's decoding), told from the error Spark raises on the driver.

A Python worker's or the streaming source's exception reaches the driver as Spark's own error,
its type gone and the Python traceback in its message: there is no typed channel back.
``raised_inside`` finds the exception's line in it, so a job can end in one line that says what
happened instead of two hundred lines of traceback:

- the brokers refused the connection reading the topic (connectors.kafka_clients.
  KafkaRefusedError: its ACLs): exit 2, as a refused login at start-up; a retry cannot help;
- a schema registry that was down while a batch decoded, or a writer schema the running job has
  no column for (tidemark.writer_schemas): exit 1, transient, and nothing was quarantined or
  skipped;
- any other failure is not recognised and stays as it was.
"""

from __future__ import annotations

import re
import sys

from connectors.kafka_clients import KafkaRefusedError
from tidemark.writer_schemas import RegistryUnavailableError, SchemaChangedError

# The errors that fail a batch without it being any record's fault: a registry away, and a
# writer schema with a field the running job has no column for yet (the next run adds it).
_BATCH_FAILURES = (RegistryUnavailableError, SchemaChangedError)


def raised_inside(error: BaseException | None, types: tuple[type[BaseException], ...]) -> str | None:
    """The message of an exception of one of ``types`` that ``error`` (or its cause) is, or whose
    traceback line (``module.Type: message``) its text holds; None when there is none."""
    line = re.compile(rf"(?:{'|'.join(re.escape(f'{t.__module__}.{t.__name__}') for t in types)}): ([^\n]+)")
    while error is not None:
        if isinstance(error, types):
            return str(error)
        found = line.search(str(error))
        if found:
            return found.group(1).strip()
        error = error.__cause__
    return None


def registry_outage(error: BaseException) -> str | None:
    """The registry's message when ``error`` (or its cause) is a batch failed by a registry outage, else None."""
    return raised_inside(error, _BATCH_FAILURES)


def exit_for_failure(job: str, stream: str, error: BaseException) -> int:
    """A job's exit status for ``error``, with one line on stderr: 2 when the brokers refused to
    let the job read its topic, or when the stream's registry schema changed in a way its table
    cannot follow (tidemark.schema_evolution: a person decides); 1 when it is a registry outage
    or a writer schema the running job has no column for (transient: Airflow's retry runs the
    job again, and the failed batch left nothing behind); any other error is raised again, as it
    was."""
    from tidemark.schema_evolution import SchemaEvolutionError

    if isinstance(error, SchemaEvolutionError):
        print(f"{job}: stream {stream!r}: {error}", file=sys.stderr)
        return 2
    refused = raised_inside(error, (KafkaRefusedError,))
    if refused is not None:
        print(f"{job}: stream {stream!r}: {refused}", file=sys.stderr)
        return 2
    outage = registry_outage(error)
    if outage is None:
        raise error
    print(f"{job}: stream {stream!r}: {outage}", file=sys.stderr)
    return 1
