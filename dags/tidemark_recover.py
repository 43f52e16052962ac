"""Recovery DAGs: one per stream in conf/streams.yaml, named tidemark_recover__<stream>, and one per
stream family for all its members, named tidemark_recover__family__<family> (the stream a param).

Triggered by the quality, sweep or backfill DAG with a recovery request's JSON
(tidemark.recovery_request.RecoveryRequest), or by a person through the params form (ranges as
text). Wiring only: parsing reads the configuration file.
"""

from __future__ import annotations

import os
from pathlib import Path

import pendulum
from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
from airflow.sdk import Param, dag, task

from tidemark.dag_ids import persist_dag_id
from tidemark.stream_config import load_streams, read_streams_file
from tidemark_airflow.alert_occasions import RecoveryLost
from tidemark_airflow.alerts import alarm_callbacks
from tidemark_airflow.dag_target import DagTarget, triggered_dag_targets
from tidemark_airflow.hour_recheck import recheck_touched_hours
from tidemark_airflow.recover_operator import RecoverOperator

CONF_PATH = os.environ.get("TIDEMARK_CONF", str(Path(__file__).resolve().parents[1] / "conf" / "streams.yaml"))


def recover_dag(target: DagTarget):
    stream = target.stream

    @dag(
        dag_id=target.dag_id,
        schedule=None,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        tags=["tidemark", "recovery", target.tag],
        params=_params(target),
        doc_md=_doc(target),
    )
    def recover():
        @task
        def validate(params=None) -> dict:
            """Every param checked before any work; the error names the param."""
            return _checked_request(target, dict(params))

        request = validate()
        recovered = RecoverOperator(
            task_id="recover",
            stream=target.stream_name,
            conf_path=CONF_PATH,
            request=request,
            conn_id=stream.persist.spark_conn_id,
            on_failure_callback=alarm_callbacks(stream, RecoveryLost(None if target.family else stream.name)),
        )

        recheck_touched_hours(stream, CONF_PATH, recovered.output, target.stream_name)

        @task.short_circuit
        def live_job_was_the_cause(request: dict) -> bool:
            """The request's decision (``restart_live``), never its prose."""
            from tidemark.recovery_request import RecoveryRequest

            return RecoveryRequest.from_json(request).restart_live

        restart = TriggerDagRunOperator(task_id="restart_live", trigger_dag_id=persist_dag_id(stream))
        recovered >> live_job_was_the_cause(request) >> restart

    return recover()


def _params(target: DagTarget) -> dict:
    """The trigger form. Its schemas are loose on purpose: the validate task checks every param
    and says which one is wrong, also for runs triggered by the quality DAG without the form
    (whose conf is a request's JSON: ranges a list of {"start", "end"}, not text)."""
    stream = target.stream
    return {
        "stream": target.stream_param(),
        "partition": Param(None, type=["null", "integer", "string"], description=stream.source.partition_hint),
        "ranges": Param(
            "",
            type=["string", "array"],
            description=f'{stream.source.position_type.name} ranges, end exclusive: "100-200,300-350"',
        ),
        "reason": Param("", type="string", description="why (kept in the report and the ledger's log)"),
        "restart_live": Param(
            False,
            type="boolean",
            description="start a persist run afterwards: the live job had stopped reading the partition",
        ),
    }


def _doc(target: DagTarget) -> str:
    return f"""
### Recover {target.title}
Replays offset ranges of one partition into the stream's tables: retention checked first (offsets
already gone are reported as **lost** and fail the run, after every recoverable range is
recovered), oldest records first, insert-only (nothing already in the lake is written again),
ledger rows with `mode=recovery`. Then re-checks the hours it touched and, when the request says
`restart_live` (the quality run sets it for a STOP or STALL partition), starts a persist run.
Offsets found LOST send an alarm to the receivers of the stream's `alerts:` (if any).

When the live job's batch in flight reads offsets this run claimed and the live job is not running
(it died in that batch), the `recover` task yields: it writes nothing but its claim and is
rescheduled a minute later (up to 30 times) while the persist DAG brings live back; live's replay
of the batch leaves the claimed offsets to this run.
"""


def _checked_request(target: DagTarget, params: dict) -> str:
    """The run's RecoveryRequest as JSON, every param checked (AirflowFailException naming the
    wrong one), for this DAG's stream (or family member) only."""
    from airflow.sdk.exceptions import AirflowFailException

    from tidemark.recovery_request import RecoveryRequestError, recovery_request_from_params

    try:
        request = recovery_request_from_params(params, load_streams(CONF_PATH))
    except RecoveryRequestError as error:
        raise AirflowFailException(str(error)) from None
    refusal = target.refusal(request.stream, "recovers")
    if refusal:
        raise AirflowFailException(refusal)
    return request.to_json()


for _target in triggered_dag_targets("recover", read_streams_file(CONF_PATH)):
    globals()[_target.dag_id] = recover_dag(_target)
