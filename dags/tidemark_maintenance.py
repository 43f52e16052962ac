"""Maintenance DAGs: one per stream in conf/streams.yaml, named tidemark_maintenance__<stream>.

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
from tidemark.stream_config import StreamConfig, load_streams
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


for _stream in load_streams(CONF_PATH).values():
    globals()[f"tidemark_maintenance__{_stream.name}"] = maintenance_dag(_stream)
