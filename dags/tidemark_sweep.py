"""Sweep DAGs: one per stream in conf/streams.yaml, named tidemark_sweep__<stream>, and one per
stream family for all its members, named tidemark_sweep__family__<family>.

Wiring only. Parsing reads the configuration file and nothing else: no Spark, no network.
"""

from __future__ import annotations

import os
from pathlib import Path

import pendulum
from airflow.sdk import dag, task
from airflow.timetables.trigger import CronTriggerTimetable

from tidemark.dag_ids import sweep_dag_id
from tidemark.stream_config import DeclaredFamily, StreamConfig, read_streams_file
from tidemark_airflow.alert_occasions import FamilyChecksFailed, QualityFindings
from tidemark_airflow.alerts import alarm_callbacks
from tidemark_airflow.family_quality_operator import FamilyQualityOperator
from tidemark_airflow.quality_operator import QualityCheckOperator
from tidemark_airflow.reader_timeout import reader_timeout
from tidemark_airflow.recovery_trigger import family_quality_requests, trigger_recovery

CONF_PATH = os.environ.get("TIDEMARK_CONF", str(Path(__file__).resolve().parents[1] / "conf" / "streams.yaml"))


def sweep_dag(stream: StreamConfig):
    @dag(
        dag_id=sweep_dag_id(stream),
        schedule=CronTriggerTimetable(stream.quality.sweep_schedule, timezone="UTC"),
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        tags=["tidemark", "quality", "sweep", stream.name],
        doc_md=f"""
### Sweep of `{stream.name}`
Re-checks the **completeness** of every sealed hour whose records the source log still retains
(`retention` back from now), on the slow schedule `quality.sweep_schedule`
(`{stream.quality.sweep_schedule}`, UTC). The quality DAG already re-checks any hour whose rows a
commit of the lake's Delta log removed or rewrote (DELETE, UPDATE, MERGE, RESTORE, an overwrite, a
compaction that drops rows); the sweep is the net under it, for what the log cannot show: files
deleted by hand, a log cleaned up, files a too-short VACUUM took. Completeness only (ledger ranges
against persisted rows), no hour report is rewritten; a hole triggers
`tidemark_recover__{stream.name}` while the log can still replay it, and fails the run.
""",
    )
    def sweep():
        check = QualityCheckOperator(
            execution_timeout=reader_timeout(stream),
            task_id="sweep",
            stream=stream.name,
            conf_path=CONF_PATH,
            reconcile=False,
            sweep=True,
            conn_id=stream.persist.spark_conn_id,
        )

        triggered = trigger_recovery(stream, check.output)

        # A sweep that left no result sends an alarm (the stream's alerts:, if any); its findings go
        # through the alarms task below: once, reminders, resolved.
        @task(
            trigger_rule="all_done",
            on_failure_callback=alarm_callbacks(stream, QualityFindings(stream.name, check_task_id="sweep")),
        )
        def verdict(result: dict) -> None:
            from airflow.sdk.exceptions import AirflowFailException

            holes = _holes(result)
            if holes:
                raise AirflowFailException(holes)

        triggered >> verdict(check.output)

        if stream.alerts:

            @task(trigger_rule="all_done")
            def alarms(result: dict | None, **context) -> dict:
                """A partition whose completeness turns HOLE or LOST: one message, reminders, one "resolved"."""
                from tidemark_airflow.quality_alarms import send_due_alarms

                return send_due_alarms(stream, result, context, checker="sweep")

            alarms(check.output)

    return sweep()


def family_sweep_dag(family: DeclaredFamily):
    name, template = family.rule.name, family.template

    @dag(
        dag_id=f"tidemark_sweep__family__{name}",
        schedule=CronTriggerTimetable(template.quality.sweep_schedule, timezone="UTC"),
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        tags=["tidemark", "quality", "sweep", "family", name],
        doc_md=f"""
### Sweep of the {len(family.members)} members of family `{name}`
Each member with a lake is swept exactly as `tidemark_sweep__<stream>` sweeps a stream
(`quality.sweep_schedule`, `{template.quality.sweep_schedule}` UTC): the completeness of every
sealed hour its log still retains. The `sweep` task sweeps them one after another in **one**
spark-submit (one Spark session for all); a member whose sweep fails fails alone. A hole
triggers `tidemark_recover__family__{name}` for its member; the verdict fails naming each member
with a hole or whose sweep failed, and each member has its own alarms. A member without a lake
yet (no persist run so far) has nothing to sweep.
""",
    )
    def family_sweep():
        swept = FamilyQualityOperator(
            execution_timeout=reader_timeout(template),
            task_id="sweep",
            family=name,
            members=list(family.members),
            conf_path=CONF_PATH,
            sweep=True,
            conn_id=template.persist.spark_conn_id,
        )
        results = swept.output
        triggered = trigger_recovery(template, results, requests_in=family_quality_requests)

        @task(trigger_rule="all_done", on_failure_callback=alarm_callbacks(template, FamilyChecksFailed("sweep")))
        def verdict(result: dict) -> None:
            """Fails naming each member with a HOLE or LOST partition, or whose sweep failed."""
            from airflow.sdk.exceptions import AirflowFailException

            if result is None:
                raise AirflowFailException("The sweep task failed: no member was swept; see its log.")

            problems = [f"{member['stream']}: {member['error']}" for member in result.get("failed", [])]
            problems += [
                f"{member}: {holes}"
                for member, summary in sorted(result["summaries"].items())
                if (holes := _holes(summary))
            ]
            if problems:
                raise AirflowFailException(" | ".join(problems))

        triggered >> verdict(results)

        if template.alerts:

            @task(trigger_rule="all_done")
            def alarms(result: dict | None, **context) -> dict:
                """Each swept member's alarms, as a stream's sweep sends them (its own memory)."""
                from tidemark_airflow.quality_alarms import send_members_alarms

                return send_members_alarms(CONF_PATH, result, context, checker="sweep")

            alarms(results)

    return family_sweep()


def _holes(result: dict) -> str | None:
    """The sweep's HOLE and LOST partitions in one sentence, None when there are none."""
    failing = [p for p in result.get("partitions", []) if p["status"] in ("HOLE", "LOST")]
    if not failing:
        return None
    return (
        "; ".join(f"partition {p['partition']}: {p['status']} ({'; '.join(p.get('reasons', []))})" for p in failing)
        + f". Recovery requested: {len(result.get('recovery_requests', []))}."
    )


_declared = read_streams_file(CONF_PATH)
for _stream in _declared.outside_families():
    globals()[sweep_dag_id(_stream)] = sweep_dag(_stream)
for _family in _declared.families_with_members():
    globals()[f"tidemark_sweep__family__{_family.rule.name}"] = family_sweep_dag(_family)
