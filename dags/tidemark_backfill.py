"""Backfill DAGs: one per stream in conf/streams.yaml, named tidemark_backfill__<stream>.

Manual runs (the params form): an event-time range, partitions and a target. Scheduled runs: the
daily reconciliation, which backfills the previous UTC day into a shadow table set, compares it
with live per partition and hour, triggers recovery for records live is missing, and fails while
anything differs. Wiring only: parsing reads the configuration file.
"""

from __future__ import annotations

import os
from pathlib import Path

import pendulum
from airflow.sdk import Param, dag, task
from airflow.timetables.trigger import CronTriggerTimetable

from tidemark.stream_config import StreamConfig, load_streams
from tidemark_airflow.backfill_operator import BackfillOperator
from tidemark_airflow.reader_timeout import reader_timeout
from tidemark_airflow.recovery_trigger import backfill_requests, trigger_recovery

CONF_PATH = os.environ.get("TIDEMARK_CONF", str(Path(__file__).resolve().parents[1] / "conf" / "streams.yaml"))


def backfill_dag(stream: StreamConfig):
    @dag(
        dag_id=f"tidemark_backfill__{stream.name}",
        schedule=CronTriggerTimetable(stream.backfill.reconcile_schedule, timezone="UTC"),
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        tags=["tidemark", "backfill", stream.name],
        params=_params(stream),
        doc_md=_doc(stream),
    )
    def backfill():
        @task
        def validate(params=None, dag_run=None) -> dict:
            """Every param checked before any work, the error naming the param; returns the
            BackfillRequest's JSON (``compare`` included) that the backfill task passes on."""
            return _checked_request(stream, dict(params), dag_run.run_after, dag_run.run_id)

        backfilled = BackfillOperator(
            execution_timeout=reader_timeout(stream),
            task_id="backfill",
            stream=stream.name,
            conf_path=CONF_PATH,
            request=validate(),
            run_name="{{ run_id }}",
            conn_id=stream.persist.spark_conn_id,
        )

        triggered = trigger_recovery(stream, backfilled.output, requests_in=backfill_requests)

        @task(trigger_rule="all_done")
        def verdict(result: dict) -> None:
            """Fails while the backfill and live differ: a backfill that disagrees is worse than none."""
            _judge(result)

        verdict_task = verdict(backfilled.output)
        triggered >> verdict_task

    return backfill()


def _params(stream: StreamConfig) -> dict:
    """The trigger form. Loose schemas on purpose: the validate task checks every param and names
    the wrong one, also for runs started without the form."""
    return {
        "start": Param("", type="string", description="event time, ISO-8601 with offset (empty: the previous UTC day)"),
        "end": Param("", type="string", description="exclusive (empty: the previous UTC day)"),
        "partitions": Param(
            "", type=["string", "array"], description=f'"0,2" (empty: all; {stream.source.partition_hint})'
        ),
        "target": Param(
            "shadow",
            type="string",
            enum=["shadow", "events"],
            description="shadow: a table set named by the run, compared with live; events: the stream's tables, insert-only",
        ),
        "shadow_name": Param("", type="string", description="the shadow table set (empty: named after the run)"),
        "compare": Param(True, type="boolean", description="shadow only: compare with live, recover what live lacks"),
    }


def _doc(stream: StreamConfig) -> str:
    return f"""
### Backfill `{stream.name}`
Reads an event-time range again from the log (the time index turns times into offsets) with the
live job's reader and writer: aligned event-time slices, routed under the global watermark live
used for those offsets, so the result equals live record for record.

- **Scheduled** (`{stream.backfill.reconcile_schedule}` UTC): the daily reconciliation. The previous
  day goes into a shadow table set and is compared with live's `events` per partition and hour (counts and
  (partition, offset) sets). Records live lacks trigger `tidemark_recover__{stream.name}`; any difference
  fails the run, listing the partition-hours.
- **Manual** (Trigger with params): any range, any partitions, into a shadow set or into the stream's own
  tables (insert-only: nothing the lake holds is written again).

A range beyond the log's retention is refused before any work; a range partly past it is backfilled where
it can be and the run fails, naming the lost offsets and event times. A run into `events` that meets the
live job's batch in flight, with the live job not running, yields and is rescheduled (as a recovery is).
"""


def _checked_request(stream: StreamConfig, params: dict, run_after, run_id: str) -> str:
    """The run's BackfillRequest as JSON, every param checked (AirflowFailException naming the
    wrong one); no start or end: the previous UTC day of when the run was due."""
    import time

    from airflow.sdk.exceptions import AirflowFailException

    from tidemark.backfill_request import BackfillRequestError, parse_backfill_request
    from tidemark.event_time_text import format_event_time

    if not params.get("start") and not params.get("end"):
        # The previous UTC day of when the run was due: the daily reconciliation.
        day = pendulum.instance(run_after).in_timezone("UTC").start_of("day")
        params["start"] = format_event_time(int(day.subtract(days=1).timestamp() * 1000))
        params["end"] = format_event_time(int(day.timestamp() * 1000))
    params["stream"] = stream.name
    try:
        request = parse_backfill_request(params, load_streams(CONF_PATH), int(time.time() * 1000), run_id)
    except BackfillRequestError as error:
        raise AirflowFailException(str(error)) from None
    return request.to_json()


def _judge(result: dict | None) -> None:
    """AirflowFailException while the backfill and live differ, naming the partition-hours."""
    from airflow.sdk.exceptions import AirflowFailException

    from tidemark.backfill_result import backfill_result_from

    if result is None:  # the run stays failed: the backfill task's log says why
        raise AirflowFailException("The backfill task returned no result: it failed, see its log.")
    try:
        done = backfill_result_from(result, "the backfill task's result")
    except ValueError as error:
        raise AirflowFailException(str(error)) from None
    if done.comparison is None or not done.comparison.differing:
        return
    differing = done.comparison.differing
    raise AirflowFailException(
        f"The backfill of [{done.start}, {done.end}) differs from live in {len(differing)} partition-hours: "
        + "; ".join(h.describe() for h in differing)
        + f". Recovery requested for {len(done.recovery_requests)} partitions."
    )


for _stream in load_streams(CONF_PATH).values():
    globals()[f"tidemark_backfill__{_stream.name}"] = backfill_dag(_stream)
