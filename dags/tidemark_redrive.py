"""Quarantine re-drive DAGs: one per stream in conf/streams.yaml, named tidemark_redrive__<stream>,
and one per stream family for all its members, tidemark_redrive__family__<family> (the stream a param).

Triggered by a person through the params form (or ``tidemark redrive``) once a contract is fixed:
the quarantined records of one reason that now decode move into events or late, exactly once
(spark_jobs/replay/redrive.py), then the hours they belong to are checked again. Wiring only:
parsing reads the configuration file.
"""

from __future__ import annotations

import os
from pathlib import Path

import pendulum
from airflow.sdk import Param, dag, task

from tidemark.stream_config import load_streams, read_streams_file
from tidemark_airflow.dag_target import DagTarget, triggered_dag_targets
from tidemark_airflow.hour_recheck import recheck_touched_hours
from tidemark_airflow.redrive_operator import RedriveOperator

CONF_PATH = os.environ.get("TIDEMARK_CONF", str(Path(__file__).resolve().parents[1] / "conf" / "streams.yaml"))


def redrive_dag(target: DagTarget):
    stream = target.stream

    @dag(
        dag_id=target.dag_id,
        schedule=None,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        tags=["tidemark", "quarantine", target.tag],
        params=_params(target),
        doc_md=_doc(target),
    )
    def redrive():
        @task
        def validate(params=None) -> dict:
            """Every param checked before any work; the error names the param."""
            return _checked_request(target, dict(params))

        moved = RedriveOperator(
            task_id="redrive",
            stream=target.stream_name,
            conf_path=CONF_PATH,
            request=validate(),
            conn_id=stream.persist.spark_conn_id,
        )

        recheck_touched_hours(stream, CONF_PATH, moved.output, target.stream_name)

    return redrive()


def _params(target: DagTarget) -> dict:
    """The trigger form; the validate task checks every param and says which one is wrong."""
    return {
        "stream": target.stream_param(),
        "reason": Param(
            "", type="string", description="the quarantine reason to re-drive, e.g. unknown_schema_id or missing_field"
        ),
        "hours": Param(
            "",
            type="string",
            description='log-time hours, "2026-11-28T05:00Z..2026-11-28T08:00Z" (UTC, whole hours); empty: every hour',
        ),
    }


def _doc(target: DagTarget) -> str:
    return f"""
### Re-drive quarantined records of {target.title}
After a contract is fixed (a field added to `conf/streams.yaml`, a registry schema restored), moves
the quarantined records of one **reason** (optionally only those written in some **hours**) that
now decode into their place, through the same decoder and watermark rules as live: a record whose
hour is sealed goes to `late`. Exactly once: a second run moves nothing, a run that crashed and is
run again leaves each record once. The quarantine rows stay, as the records' history. Then the
hours the moved records belong to are checked again.
"""


def _checked_request(target: DagTarget, params: dict) -> dict:
    """The run's RedriveRequest as JSON, every param checked (AirflowFailException naming the
    wrong one), for this DAG's stream only."""
    from airflow.sdk.exceptions import AirflowFailException

    from tidemark.redrive_request import RedriveRequestError, parse_redrive_form

    try:
        request = parse_redrive_form(params, load_streams(CONF_PATH))
    except RedriveRequestError as error:
        raise AirflowFailException(str(error)) from None
    refusal = target.refusal(request.stream, "re-drives")
    if refusal:
        raise AirflowFailException(refusal)
    return request.to_json()


for _target in triggered_dag_targets("redrive", read_streams_file(CONF_PATH)):
    globals()[_target.dag_id] = redrive_dag(_target)
