"""Maintenance DAGs: one per stream in conf/streams.yaml, named tidemark_maintenance__<stream>, and
one per stream family for all its members, tidemark_maintenance__family__<family>.

On ``maintenance.schedule``: compaction of the sealed hours of events, then VACUUM of every table
with ``maintenance.vacuum_retain`` (spark_jobs/maintenance/job.py). Wiring only: parsing reads the
configuration file.
"""

from __future__ import annotations

import os
from pathlib import Path

import pendulum
from airflow.sdk import dag
from airflow.timetables.trigger import CronTriggerTimetable

from tidemark.duration import format_duration_ms
from tidemark.stream_config import DeclaredFamily, StreamConfig, read_streams_file
from tidemark_airflow.family_look_operator import FamilyMaintenanceLookOperator
from tidemark_airflow.family_maintenance_operator import FamilyMaintenanceOperator
from tidemark_airflow.family_verdict import FamilyVerdictOperator
from tidemark_airflow.maintenance_operator import MaintenanceOperator

CONF_PATH = os.environ.get("TIDEMARK_CONF", str(Path(__file__).resolve().parents[1] / "conf" / "streams.yaml"))


def maintenance_dag(stream: StreamConfig):
    settings = stream.maintenance

    @dag(
        dag_id=f"tidemark_maintenance__{stream.name}",
        schedule=CronTriggerTimetable(settings.schedule, timezone="UTC"),
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        tags=["tidemark", "maintenance", stream.name],
        doc_md=f"""
### Maintenance of `{stream.name}`
Compacts every **sealed** event-time hour of `events` holding `{settings.compact_min_files}` files
or more (OPTIMIZE with the hour as its predicate; `dataChange=false`, so no check or reader sees a
difference), never an hour still being written; a compaction that meets a recovery's or a
backfill's commit retries and then leaves the hour for the next run. Then VACUUMs every table,
deleting files that commits older than `{format_duration_ms(settings.vacuum_retain_ms)}` removed:
longer than `maintenance.reader_timeout` (`{format_duration_ms(settings.reader_timeout_ms)}`), the
execution_timeout of every task that reads the lake, so no running reader loses a file.
""",
    )
    def maintenance():
        MaintenanceOperator(
            task_id="maintain",
            stream=stream.name,
            conf_path=CONF_PATH,
            conn_id=stream.persist.spark_conn_id,
        )

    return maintenance()


def family_maintenance_dag(family: DeclaredFamily):
    name, template = family.rule.name, family.template
    settings = template.maintenance

    @dag(
        dag_id=f"tidemark_maintenance__family__{name}",
        schedule=CronTriggerTimetable(settings.schedule, timezone="UTC"),
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        tags=["tidemark", "maintenance", "family", name],
        doc_md=f"""
### Maintenance of the {len(family.members)} members of family `{name}`
`look` asks of every member, without Spark, whether a sealed hour or a small table is due for
compaction, a claim for settling or a file for VACUUM, and deals the members that have something
to do into at most **{family.rule.max_drivers}** groups; `maintain` starts one driver per group,
which maintains its members one after another as `tidemark_maintenance__<stream>` maintains a
stream; `verdict` fails naming any member whose maintenance failed (the others' stands).
""",
    )
    def family_maintenance():
        groups = FamilyMaintenanceLookOperator.for_family(family, CONF_PATH, task_id="look")
        drivers = FamilyMaintenanceOperator.partial(
            task_id="maintain", conf_path=CONF_PATH, conn_id=template.persist.spark_conn_id
        ).expand(streams=groups.output)
        drivers >> FamilyVerdictOperator(task_id="verdict", driver_task_id="maintain")

    return family_maintenance()


_declared = read_streams_file(CONF_PATH)
for _stream in _declared.outside_families():
    globals()[f"tidemark_maintenance__{_stream.name}"] = maintenance_dag(_stream)
for _family in _declared.families_with_members():
    globals()[f"tidemark_maintenance__family__{_family.rule.name}"] = family_maintenance_dag(_family)
