"""Backfill DAGs: one per stream in conf/streams.yaml, named tidemark_backfill__<stream>, and one per
stream family for all its members, named tidemark_backfill__family__<family> (the stream a param).

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

from tidemark.dag_ids import family_triggered_dag_id
from tidemark.stream_config import DeclaredFamily, StreamConfig, load_streams, read_streams_file
from tidemark_airflow.backfill_operator import BackfillOperator
from tidemark_airflow.reader_timeout import reader_timeout
from tidemark_airflow.recovery_trigger import backfill_requests, each_members, trigger_recovery

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
            return _checked_request(stream, load_streams(CONF_PATH), dict(params), dag_run.run_after, dag_run.run_id)

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


def family_backfill_dag(family: DeclaredFamily):
    name, template = family.rule.name, family.template

    @dag(
        dag_id=family_triggered_dag_id("backfill", name),
        schedule=CronTriggerTimetable(template.backfill.reconcile_schedule, timezone="UTC"),
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        tags=["tidemark", "backfill", "family", name],
        params={"stream": _member_param(family), **_params(template)},
        doc_md=_family_doc(family),
    )
    def backfill_family():
        @task
        def validate(params=None, dag_run=None) -> list[dict]:
            """Every param checked for every member the run backfills, before any work: a list of
            {"stream", "request"} (a BackfillRequest's JSON), one per member, in the members' order."""
            return _checked_family_requests(family, dict(params), dag_run.run_after, dag_run.run_id)

        requests = validate()
        backfilled = BackfillOperator.partial(
            execution_timeout=reader_timeout(template),
            task_id="backfill",
            conf_path=CONF_PATH,
            run_name="{{ run_id }}",
            conn_id=template.persist.spark_conn_id,
            # A bounded pool: the daily reconciliation of 200 members runs max_drivers at a time.
            max_active_tis_per_dagrun=family.rule.max_drivers,
        ).expand_kwargs(requests)

        triggered = trigger_recovery(
            template, backfilled.output, requests_in=each_members(backfill_requests), trigger_rule="all_done"
        )

        @task(trigger_rule="all_done")
        def verdict(requests: list[dict], ti=None) -> None:
            """Fails naming every member whose backfill failed or differs from live; the others' stand."""
            results = [ti.xcom_pull(task_ids="backfill", map_indexes=index) for index in range(len(requests))]
            _judge_family([request["stream"] for request in requests], results)

        triggered >> verdict(requests)

    return backfill_family()


def _member_param(family: DeclaredFamily):
    members = list(family.members)
    return Param(
        "",
        type="string",
        enum=["", *members],
        description=f"the member of family {family.rule.name} (empty: all {len(members)}, as the daily reconciliation)",
    )


def _family_doc(family: DeclaredFamily) -> str:
    name, template = family.rule.name, family.template
    return f"""
### Backfill the {len(family.members)} members of family `{name}`
Each member is backfilled exactly as `tidemark_backfill__<stream>` backfills a stream: one
`backfill` task per member (mapped), at most **{family.rule.max_drivers}** at a time (`max_drivers`).

- **Scheduled** (`{template.backfill.reconcile_schedule}` UTC): the daily reconciliation of every
  member: the previous day into a shadow table set, compared with the member's live `events`.
  Records live lacks trigger `tidemark_recover__family__{name}` for that member.
- **Manual** (Trigger with params): the `stream` param names one member (empty: all of them), the
  other params as a stream's backfill takes them.

A member whose backfill fails or differs from live fails alone: the others' backfills and
recoveries go on, and `verdict` names each.
"""


def _checked_family_requests(family: DeclaredFamily, params: dict, run_after, run_id: str) -> list[dict]:
    """One {"stream", "request"} per member the run backfills: the ``stream`` param's, or every
    member's when it is empty. AirflowFailException naming the member and the param when a
    param is wrong for one of them: nothing starts."""
    from airflow.sdk.exceptions import AirflowFailException

    member = params.pop("stream", "") or ""
    streams = load_streams(CONF_PATH)
    if member and member not in family.members:
        raise AirflowFailException(f"param 'stream': {member!r} is not a member of family {family.rule.name!r}")
    names = [member] if member else [name for name in family.members if name in streams]
    if not names:
        raise AirflowFailException(f"family {family.rule.name!r} has no member to backfill")
    requests = []
    for name in names:
        if name not in streams:
            raise AirflowFailException(f"param 'stream': {name!r} is no longer a member (excluded since the parse)")
        try:
            request = _checked_request(streams[name], streams, dict(params), run_after, run_id)
        except AirflowFailException as error:
            raise AirflowFailException(f"stream {name}: {error}") from None
        requests.append({"stream": name, "request": request})
    return requests


def _judge_family(members: list[str], results: list[dict | None]) -> None:
    """AirflowFailException naming each member whose backfill failed (no result) or differs."""
    from airflow.sdk.exceptions import AirflowFailException

    problems = []
    for member, result in zip(members, results, strict=True):
        try:
            _judge(result)
        except AirflowFailException as error:
            problems.append(f"{member}: {error}")
    if problems:
        raise AirflowFailException(
            f"{len(problems)} of {len(members)} members failed, each alone: " + " | ".join(problems)
        )


def _checked_request(stream: StreamConfig, streams: dict, params: dict, run_after, run_id: str) -> str:
    """The run's BackfillRequest for ``stream`` as JSON (``streams``: every stream, by name), every
    param checked (AirflowFailException naming the wrong one); no start or end: the previous UTC
    day of when the run was due."""
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
        request = parse_backfill_request(params, streams, int(time.time() * 1000), run_id)
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


_declared = read_streams_file(CONF_PATH)
for _stream in _declared.outside_families():
    globals()[f"tidemark_backfill__{_stream.name}"] = backfill_dag(_stream)
for _family in _declared.families_with_members():
    globals()[family_triggered_dag_id("backfill", _family.rule.name)] = family_backfill_dag(_family)
