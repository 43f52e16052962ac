"""Sweep DAGs: one per stream in conf/streams.yaml, named tidemark_sweep__<stream>.

Wiring only. Parsing reads the configuration file and nothing else: no Spark, no network.
"""

from __future__ import annotations

import os
from pathlib import Path

import pendulum
from airflow.sdk import dag, task
from airflow.timetables.trigger import CronTriggerTimetable

from tidemark.stream_config import StreamConfig, load_streams
from tidemark_airflow.alert_occasions import QualityFindings
from tidemark_airflow.alerts import alarm_callbacks
from tidemark_airflow.quality_operator import QualityCheckOperator
from tidemark_airflow.reader_timeout import reader_timeout
from tidemark_airflow.recovery_trigger import trigger_recovery

CONF_PATH = os.environ.get("TIDEMARK_CONF", str(Path(__file__).resolve().parents[1] / "conf" / "streams.yaml"))


def sweep_dag(stream: StreamConfig):
    @dag(
        dag_id=f"tidemark_sweep__{stream.name}",
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

            failing = [p for p in result.get("partitions", []) if p["status"] in ("HOLE", "LOST")]
            if failing:
                raise AirflowFailException(
                    "; ".join(
                        f"partition {p['partition']}: {p['status']} ({'; '.join(p.get('reasons', []))})"
                        for p in failing
                    )
                    + f". Recovery requested: {len(result.get('recovery_requests', []))}."
                )

        triggered >> verdict(check.output)

        if stream.alerts:

            @task(trigger_rule="all_done")
            def alarms(result: dict | None, **context) -> dict:
                """A partition whose completeness turns HOLE or LOST: one message, reminders, one "resolved"."""
                from tidemark_airflow.quality_alarms import send_due_alarms

                return send_due_alarms(stream, result, context, checker="sweep")

            alarms(check.output)

    return sweep()


for _stream in load_streams(CONF_PATH).values():
    globals()[f"tidemark_sweep__{_stream.name}"] = sweep_dag(_stream)
