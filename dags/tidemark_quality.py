"""Quality DAGs: one per stream in conf/streams.yaml, named tidemark_quality__<stream>, and one per
stream family for all its members, named tidemark_quality__family__<family>.

Wiring only. Parsing reads the configuration file and nothing else: no Spark, no network.
"""

from __future__ import annotations

import os
from pathlib import Path

import pendulum
from airflow.sdk import AssetAny, dag, task
from airflow.timetables.assets import AssetOrTimeSchedule
from airflow.timetables.trigger import CronTriggerTimetable

from tidemark.stream_config import DeclaredFamily, StreamConfig, load_streams, read_streams_file
from tidemark_airflow.alert_occasions import FamilyChecksFailed, FamilyUnsealedHours, QualityFindings, UnsealedHours
from tidemark_airflow.alerts import alarm_callbacks
from tidemark_airflow.family_quality_operator import FamilyQualityOperator
from tidemark_airflow.quality_operator import QualityCheckOperator
from tidemark_airflow.reader_timeout import reader_timeout
from tidemark_airflow.recovery_trigger import family_quality_requests, trigger_recovery
from tidemark_airflow.sealed_hour_assets import sealed_hours_asset

CONF_PATH = os.environ.get("TIDEMARK_CONF", str(Path(__file__).resolve().parents[1] / "conf" / "streams.yaml"))

# Statuses that let the run pass; any other, or any failed check, fails it once recovery was
# triggered: a person must look.
PASSING = ("OK", "WARN")


def quality_dag(stream: StreamConfig):
    @dag(
        dag_id=f"tidemark_quality__{stream.name}",
        # Per sealed hour (the persist runs' asset events), and on a short time schedule too: a
        # stalled partition holds G, so its hours stop sealing and no event would ever come.
        schedule=AssetOrTimeSchedule(
            timetable=CronTriggerTimetable(stream.quality.schedule, timezone="UTC"),
            assets=sealed_hours_asset(stream.name),
        ),
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        tags=["tidemark", "quality", stream.name],
        doc_md=_doc(stream),
    )
    def quality():
        @task
        def hours_to_check(triggering_asset_events=None) -> list[str]:
            """Every hour of every triggering event: several hours can seal before one run."""
            hours = set()
            for events in (triggering_asset_events or {}).values():
                hours.update(event.extra["hour"] for event in events if event.extra and event.extra.get("hour"))
            return sorted(hours)

        check = QualityCheckOperator(
            execution_timeout=reader_timeout(stream),
            task_id="check",
            stream=stream.name,
            conf_path=CONF_PATH,
            hours=hours_to_check(),
            conn_id=stream.persist.spark_conn_id,
        )

        triggered = trigger_recovery(stream, check.output)

        @task(trigger_rule="all_done", on_failure_callback=alarm_callbacks(stream, QualityFindings(stream.name)))
        def verdict(result: dict) -> None:
            """Fails while a partition is not OK (or WARN), or a check failed: a person must look."""
            _judge(result)

        verdict_task = verdict(check.output)
        triggered >> verdict_task

        if stream.alerts:

            @task(trigger_rule="all_done")
            def alarms(result: dict | None, **context) -> dict:
                """A partition entering STALL, STOP, HOLE or LOST: one message; a reminder at most every
                alerts.remind_every while it stays; one "resolved" when it passes again."""
                from tidemark_airflow.quality_alarms import send_due_alarms

                return send_due_alarms(stream, result, context)

            alarms(check.output)

        if stream.alerts and stream.alerts.unsealed_hour_after_ms:

            @task(on_failure_callback=alarm_callbacks(stream, UnsealedHours(stream.name)))
            def seal_deadline(ti=None) -> dict:
                """Fails, for the alarm, when an hour is not sealed within alerts.unsealed_hour_after of its end."""
                from airflow.sdk.exceptions import AirflowFailException

                from tidemark.duration import format_duration_ms
                from tidemark_airflow.alert_occasions import SEAL_DEADLINE_KEY
                from tidemark_airflow.seal_deadline import seal_deadline_figures

                figures = seal_deadline_figures(stream)
                if figures["overdue_ms"]:
                    ti.xcom_push(key=SEAL_DEADLINE_KEY, value=figures)
                    raise AirflowFailException(
                        f"{len(figures['overdue_ms'])} event-time hours of {stream.name} are not sealed "
                        f"{format_duration_ms(stream.alerts.unsealed_hour_after_ms)} after their end (alerts.unsealed_hour_after)"
                    )
                return figures

            seal_deadline()

    return quality()


def _doc(stream: StreamConfig) -> str:
    return f"""
### Quality of `{stream.name}`
Runs the Great Expectations checks of every newly sealed hour, per source partition: completeness
against the ledger (data records, not offsets), offset holes, silent partition-hours, event-time
gaps, uniqueness of (partition, offset), late and quarantine counts, and each partition's stall
status (STOP / STALL / LAGGING / WARN / OK) with lost offsets past retention. Hours come from the
triggering asset events *and* from the `seals` table (an hour whose event was lost is still
checked). Writes Data Docs and a per-partition summary (JSON and HTML; paths in the `check` task
log), triggers `tidemark_recover__{stream.name}` for every stalled or gapped partition, and fails
when a partition is not OK, so the run shows red until it is. A partition entering STALL, STOP,
HOLE or LOST sends one alarm to the receivers of the stream's `alerts:` (if any), a reminder at
most every `alerts.remind_every` while it stays, and one "resolved" when it passes again (the
`alarms` task; its memory is the Variable `tidemark_alarms__{stream.name}`). An hour not sealed
`alerts.unsealed_hour_after` after its end sends an alarm too.
"""


def _judge(result: dict) -> None:
    """AirflowFailException naming every partition that is not passing, and the recoveries asked."""
    from airflow.sdk.exceptions import AirflowFailException

    failing = [p for p in result.get("partitions", []) if p["status"] not in PASSING or p.get("failed_checks")]
    if failing:
        raise AirflowFailException(
            "; ".join(f"partition {p['partition']}: {p['status']} ({'; '.join(p.get('reasons', []))})" for p in failing)
            + f". Recovery requested: {len(result.get('recovery_requests', []))}."
        )


def family_quality_dag(family: DeclaredFamily):
    name, template = family.rule.name, family.template

    @dag(
        dag_id=f"tidemark_quality__family__{name}",
        # Per sealed hour of any member, and on the members' quality schedule (a stalled member's
        # hours stop sealing: no event would ever come).
        schedule=AssetOrTimeSchedule(
            timetable=CronTriggerTimetable(template.quality.schedule, timezone="UTC"),
            assets=AssetAny(*(sealed_hours_asset(member) for member in family.members)),
        ),
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        tags=["tidemark", "quality", "family", name],
        doc_md=_family_doc(family),
    )
    def family_quality():
        @task
        def hours_to_check(triggering_asset_events=None) -> dict[str, list[str]]:
            """Every hour of every triggering event, by the member that sealed it."""
            hours: dict[str, set[str]] = {}
            for events in (triggering_asset_events or {}).values():
                for event in events:
                    extra = event.extra or {}
                    if extra.get("stream") and extra.get("hour"):
                        hours.setdefault(extra["stream"], set()).add(extra["hour"])
            return {member: sorted(asked) for member, asked in hours.items()}

        check = FamilyQualityOperator(
            execution_timeout=reader_timeout(template),
            task_id="check",
            family=name,
            members=list(family.members),
            conf_path=CONF_PATH,
            hours=hours_to_check(),
            conn_id=template.persist.spark_conn_id,
        )

        triggered = trigger_recovery(template, check.output, requests_in=family_quality_requests)

        @task(trigger_rule="all_done", on_failure_callback=alarm_callbacks(template, FamilyChecksFailed()))
        def verdict(result: dict) -> None:
            """Fails naming every member with a partition not OK (or WARN), or whose check failed."""
            _judge_family(result)

        verdict_task = verdict(check.output)
        triggered >> verdict_task

        if template.alerts:

            @task(trigger_rule="all_done")
            def alarms(result: dict | None, **context) -> dict:
                """Each checked member's alarms, as a stream's ``alarms`` task sends them (its own memory)."""
                from tidemark_airflow.quality_alarms import send_members_alarms

                return send_members_alarms(CONF_PATH, result, context)

            alarms(check.output)

        if template.alerts and template.alerts.unsealed_hour_after_ms:

            @task(on_failure_callback=alarm_callbacks(template, FamilyUnsealedHours()))
            def seal_deadline(ti=None) -> dict:
                """Fails, for each member's alarm, when a member's hour is not sealed within alerts.unsealed_hour_after."""
                from airflow.sdk.exceptions import AirflowFailException

                from tidemark_airflow.alert_occasions import SEAL_DEADLINE_KEY
                from tidemark_airflow.seal_deadline import seal_deadline_figures

                streams = load_streams(CONF_PATH)
                figures = {
                    member: seal_deadline_figures(streams[member]) for member in family.members if member in streams
                }
                overdue = {member: f for member, f in figures.items() if f["overdue_ms"]}
                if overdue:
                    ti.xcom_push(key=SEAL_DEADLINE_KEY, value=overdue)
                    raise AirflowFailException(
                        f"members with event-time hours not sealed in time (alerts.unsealed_hour_after): {', '.join(sorted(overdue))}"
                    )
                return {"members": len(figures)}

            seal_deadline()

    return family_quality()


def _family_doc(family: DeclaredFamily) -> str:
    return f"""
### Quality of the {len(family.members)} members of family `{family.rule.name}`
One tick checks every member that needs it, as `tidemark_quality__<stream>` checks a stream: the
hours its sealed-hours events name, every sealed hour without a report, its stall and retention.
A look without Great Expectations leaves out the members whose tables no commit changed since
a check that passed and whose log holds nothing new: their answer stands. The members checked
are checked one after another in one process (Great Expectations started once). Each member has
its own reports, recovery requests (to `tidemark_recover__family__{family.rule.name}`), alarm memory
and alarms; a member whose check fails fails alone, and the verdict names it. A member with no
events table yet (its first persist run has not ended, or its topic went before it) has nothing to
check: it is named "not persisted yet" and fails nothing here; its persist tick fails and alarms.
"""


def _judge_family(result: dict) -> None:
    """AirflowFailException naming each member whose check failed or has a partition not passing."""
    from airflow.sdk.exceptions import AirflowFailException

    problems = [f"{member['stream']}: the check failed ({member['error']})" for member in result.get("failed", [])]
    for member, summary in sorted(result.get("summaries", {}).items()):
        try:
            _judge(summary)
        except AirflowFailException as error:
            problems.append(f"{member}: {error}")
    if problems:
        raise AirflowFailException(" | ".join(problems))


_declared = read_streams_file(CONF_PATH)
for _stream in _declared.outside_families():
    globals()[f"tidemark_quality__{_stream.name}"] = quality_dag(_stream)
for _family in _declared.families_with_members():
    globals()[f"tidemark_quality__family__{_family.rule.name}"] = family_quality_dag(_family)
