"""Erasure DAGs: one per stream in conf/streams.yaml, named tidemark_erase__<stream>, and one per
stream family for all its members, named tidemark_erase__family__<family> (the stream a param).

Triggered by a person through the params form (or ``tidemark erase``) to remove someone's
records: the records a predicate on the payload columns names leave events, late and
quarantine, are recorded in the stream's erasures table so that no job writes them again
(spark_jobs/erasure/job.py), and the hours they belonged to are checked again. Wiring only:
parsing reads the configuration file.
"""

from __future__ import annotations

import os
from pathlib import Path

import pendulum
from airflow.sdk import Param, dag, task

from tidemark.stream_config import load_streams, read_streams_file
from tidemark_airflow.dag_target import DagTarget, triggered_dag_targets
from tidemark_airflow.erase_operator import EraseOperator
from tidemark_airflow.hour_recheck import recheck_touched_hours

CONF_PATH = os.environ.get("TIDEMARK_CONF", str(Path(__file__).resolve().parents[1] / "conf" / "streams.yaml"))


def erase_dag(target: DagTarget):
    stream = target.stream

    @dag(
        dag_id=target.dag_id,
        schedule=None,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        tags=["tidemark", "erasure", target.tag],
        params=_params(target),
        doc_md=_doc(target),
    )
    def erase():
        @task
        def validate(params=None, dag_run=None) -> dict:
            """Every param checked before any work; the error names the param. Who asked: the
            ``requested_by`` param, else the user who triggered the run."""
            params = dict(params)
            if not str(params.get("requested_by") or "").strip():
                params["requested_by"] = getattr(dag_run, "triggering_user_name", None) or ""
            return _checked_request(target, params)

        erased = EraseOperator(
            task_id="erase",
            stream=target.stream_name,
            conf_path=CONF_PATH,
            request=validate(),
            conn_id=stream.persist.spark_conn_id,
        )

        recheck_touched_hours(stream, CONF_PATH, erased.output, target.stream_name)

    return erase()


def _params(target: DagTarget) -> dict:
    """The trigger form; the validate task checks every param and says which one is wrong."""
    return {
        "stream": target.stream_param(),
        "where": Param(
            "",
            type="string",
            description="the records to erase: payload columns = 'value' (or IN (...)), joined by AND, "
            "e.g. device_id = 'scooter-7'",
        ),
        "requested_by": Param("", type="string", description="who asked for it; empty: you, the user triggering"),
        "reason": Param("", type="string", description="why (kept with the erasure), e.g. a ticket number"),
    }


def _doc(target: DagTarget) -> str:
    return f"""
### Erase records of {target.title}
Removes the records **where** names (equalities on payload columns, e.g. `device_id = 'scooter-7'`)
from `events`, `late` and `quarantine` (the raw bytes too), and records each in the stream's
`erasures` table with who asked, why and when. From then on no job writes them again (live,
recovery, backfill, re-drive, the daily reconciliation), and the quality checks count them as
erased, not missing. Records the live job has not read yet are not erased: the task says where,
run it again once live has caught up. Then the hours the records belonged to are checked again.
"""


def _checked_request(target: DagTarget, params: dict) -> dict:
    """The run's ErasureRequest as JSON, every param checked (AirflowFailException naming the
    wrong one), for this DAG's stream only."""
    from airflow.sdk.exceptions import AirflowFailException

    from tidemark.erasure_request import ErasureRequestError, parse_erase_form

    try:
        request = parse_erase_form(params, load_streams(CONF_PATH))
    except ErasureRequestError as error:
        raise AirflowFailException(str(error)) from None
    refusal = target.refusal(request.stream, "erases from")
    if refusal:
        raise AirflowFailException(refusal)
    return request.to_json()


for _target in triggered_dag_targets("erase", read_streams_file(CONF_PATH)):
    globals()[_target.dag_id] = erase_dag(_target)
