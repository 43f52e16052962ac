"""The tail of the DAGs that change records of sealed hours (recover, redrive, erase): the hours
the change touched are checked again.

Each of those jobs returns a result value with ``event_hours`` (tidemark.recovery_result,
tidemark.redrive_result, tidemark.erasure_result): the ``touched_hours`` task reads that field
through one typed view of it, and the ``recheck`` task runs the quality check of those hours,
stopped after ``maintenance.reader_timeout`` like every reader of the lake.
"""

from __future__ import annotations

from typing import Any

import msgspec

from tidemark.stream_config import StreamConfig


class TouchedHours(msgspec.Struct, frozen=True):
    """What the recheck needs of a job's result: the event hours it touched (ISO-8601, UTC)."""

    event_hours: tuple[str, ...]


def recheck_touched_hours(stream: StreamConfig, conf_path: str, result: Any, stream_name: str | None = None):
    """The ``touched_hours`` and ``recheck`` tasks after the task whose output is ``result``.
    ``stream_name``: the stream to check when it is not ``stream``'s name (a family's DAG: the
    run's param; ``stream`` is then the family's template, for the timeout and the connection)."""
    from airflow.sdk import task

    from tidemark_airflow.quality_operator import QualityCheckOperator
    from tidemark_airflow.reader_timeout import reader_timeout

    @task
    def touched_hours(result: dict) -> list[str]:
        """The event hours the job's records belong to, from its result's ``event_hours``."""
        return list(msgspec.convert(result, TouchedHours).event_hours)

    return QualityCheckOperator(
        execution_timeout=reader_timeout(stream),
        task_id="recheck",
        stream=stream_name or stream.name,
        conf_path=conf_path,
        hours=touched_hours(result),
        reconcile=False,
        conn_id=stream.persist.spark_conn_id,
    )
