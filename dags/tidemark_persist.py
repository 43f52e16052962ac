"""Persist DAGs: one per stream in conf/streams.yaml, named tidemark_persist__<stream>, and one per
stream family whose members run bounded (available_now), named tidemark_persist__family__<family>.

Wiring only. Parsing reads the configuration file and the families' listings, nothing else: no
Spark, no network.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pendulum
from airflow.sdk import dag

from tidemark.dag_ids import family_persist_dag_id, persist_dag_id
from tidemark.stream_config import DeclaredFamily, StreamConfig, read_streams_file
from tidemark_airflow.alert_occasions import FamilyMembersFailed, PersistFailed
from tidemark_airflow.alerts import alarm_callbacks
from tidemark_airflow.family_look_operator import FamilyPersistLookOperator
from tidemark_airflow.family_persist_operator import FamilyPersistOperator
from tidemark_airflow.family_verdict import FamilyVerdictOperator
from tidemark_airflow.persist_operator import PersistStreamOperator
from tidemark_airflow.sealed_hour_assets import sealed_hours_alias, sealed_hours_asset

CONF_PATH = os.environ.get("TIDEMARK_CONF", str(Path(__file__).resolve().parents[1] / "conf" / "streams.yaml"))


def persist_dag(stream: StreamConfig):
    continuous = stream.persist.mode == "continuous"

    @dag(
        dag_id=persist_dag_id(stream),
        # available_now: a bounded catch-up run on a short schedule. continuous: one long-running
        # query; "@continuous" starts a new run as soon as one ends, so a crashed job is restarted.
        schedule="@continuous" if continuous else stream.persist.schedule,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        tags=["tidemark", "persist", stream.name],
        doc_md=f"""
### Persist `{stream.name}`
Reads {stream.source.description} into the Delta tables
under `{stream.lake.root}/{stream.name}/`: `events`, `quarantine` (undecodable records, with a reason)
and `ledger` (one row per batch and partition). Mode: **{stream.persist.mode}**. Exactly-once: Spark's
checkpoint plus idempotent Delta commits, so a killed run is simply run again.

Every event-time hour a run newly seals becomes one event of the asset `{sealed_hours_asset(stream.name).name}`
(extra: `stream`, `hour`, `global_watermark`), emitted through the alias `{sealed_hours_alias(stream.name).name}`.

When the task fails its last try, an alarm goes to the receivers of the stream's `alerts:` (if any).
""",
    )
    def persist():
        PersistStreamOperator(
            task_id="persist",
            stream=stream.name,
            conf_path=CONF_PATH,
            conn_id=stream.persist.spark_conn_id,
            outlets=[sealed_hours_alias(stream.name)],
            retries=0 if continuous else 2,
            retry_delay=timedelta(minutes=1),
            # Called once the last try failed (not on the retries before it).
            on_failure_callback=alarm_callbacks(stream, PersistFailed(stream.name)),
        )

    return persist()


def family_persist_dag(family: DeclaredFamily):
    name, template = family.rule.name, family.template

    @dag(
        dag_id=family_persist_dag_id(name),
        schedule=template.persist.schedule,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        tags=["tidemark", "persist", "family", name],
        doc_md=f"""
### Persist the {len(family.members)} members of family `{name}`
One tick for every member: `look` reads each member's ledger and its topic's bounds without Spark
(one Kafka client for all topics) and deals the members with work into at most
**{family.rule.max_drivers}** groups (`max_drivers`); `persist` starts one driver per group, which
persists its members one after another: a tick never starts a JVM per member. Each member keeps
its own tables under `{template.lake.root}/<member>/`, checkpoint and ledger, and fails alone: the
others' runs and sealed-hour events go on, and `verdict` fails naming it and raises its own alarm.
""",
    )
    def persist_family():
        groups = FamilyPersistLookOperator.for_family(family, CONF_PATH, task_id="look")
        drivers = FamilyPersistOperator.partial(
            task_id="persist",
            conf_path=CONF_PATH,
            conn_id=template.persist.spark_conn_id,
            # Every member's alias: a driver emits its own members' events only.
            outlets=[sealed_hours_alias(member) for member in family.members],
            retries=1,
            retry_delay=timedelta(minutes=1),
        ).expand(streams=groups.output)
        drivers >> FamilyVerdictOperator(
            task_id="verdict", on_failure_callback=alarm_callbacks(template, FamilyMembersFailed())
        )

    return persist_family()


_declared = read_streams_file(CONF_PATH)
for _stream in _declared.streams.values():
    if persist_dag_id(_stream) == f"tidemark_persist__{_stream.name}":
        globals()[persist_dag_id(_stream)] = persist_dag(_stream)
for _family in _declared.families.values():
    if persist_dag_id(_family.template) == family_persist_dag_id(_family.rule.name):
        globals()[family_persist_dag_id(_family.rule.name)] = family_persist_dag(_family)
