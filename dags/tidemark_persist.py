"""Persist DAGs: one per stream in conf/streams.yaml, named tidemark_persist__<stream>.

Wiring only. Parsing reads the configuration file and nothing else: no Spark, no network.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pendulum
from airflow.sdk import dag

from tidemark.stream_config import StreamConfig, load_streams
from tidemark_airflow.alert_occasions import PersistFailed
from tidemark_airflow.alerts import alarm_callbacks
from tidemark_airflow.persist_operator import PersistStreamOperator
from tidemark_airflow.sealed_hour_assets import sealed_hours_alias, sealed_hours_asset

CONF_PATH = os.environ.get("TIDEMARK_CONF", str(Path(__file__).resolve().parents[1] / "conf" / "streams.yaml"))


def persist_dag(stream: StreamConfig):
    continuous = stream.persist.mode == "continuous"

    @dag(
        dag_id=f"tidemark_persist__{stream.name}",
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


for _stream in load_streams(CONF_PATH).values():
    globals()[f"tidemark_persist__{_stream.name}"] = persist_dag(_stream)
