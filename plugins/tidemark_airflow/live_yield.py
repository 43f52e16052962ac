"""A recovery or a backfill into events that yielded to the live job's batch in flight
(tidemark.live_batch_wait) runs again later: its task is rescheduled, Airflow's
UP_FOR_RESCHEDULE, which is no retry and spends none, every ``delay``, at most ``max_yields``
times. Meanwhile the live job's own retries or its next scheduled run replay the batch without
the claimed offsets. A task that yielded ``max_yields`` times fails, naming what it waited for."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, NoReturn

from tidemark.live_batch_wait import LiveBatchYield

# Defaults of the operators: a minute between runs (the live job's retry delay), for half an
# hour (a persist run every 5 minutes has come back several times over by then).
YIELD_DELAY = timedelta(minutes=1)
MAX_YIELDS = 30


def reschedule_after_yield(
    context: Any, yielded: LiveBatchYield, job: str, delay: timedelta, max_yields: int, log
) -> NoReturn:
    """Raise Airflow's reschedule for the task in ``context``, or its failure once it has yielded
    ``max_yields`` times. ``job``: "recovery" or "backfill", for the log line."""
    from airflow.sdk.exceptions import AirflowException, AirflowRescheduleException

    earlier = int(context.get("task_reschedule_count", 0) or 0)
    if earlier >= max_yields:
        raise AirflowException(
            f"This {job} yielded to the live job {earlier + 1} times over {earlier * delay.total_seconds() / 60:.0f} "
            f"minutes and the live job never came back: {yielded.sentence(job)}. Start the stream's persist DAG (its "
            f"run replays batch {yielded.live_batch}), then clear this task."
        )
    when = datetime.now(UTC) + delay
    log.warning(
        "Yielded to the live job (%d of at most %d): %s. Airflow runs this task again at %s.",
        earlier + 1,
        max_yields,
        yielded.sentence(job),
        when.strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    raise AirflowRescheduleException(when)
