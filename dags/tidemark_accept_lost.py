"""Accept-lost DAGs: one per stream in conf/streams.yaml, named tidemark_accept_lost__<stream>, and
one per stream family for all its members, tidemark_accept_lost__family__<family> (the stream a param).

Triggered by a person through the params form (or ``tidemark accept-lost``) once a range lost to
retention cannot be restored: it records the range as accepted as lost (one ledger row, with who
and when), so the live job reads on after it at its next run (tidemark.accepted_loss). Wiring
only: parsing reads the configuration file.
"""

from __future__ import annotations

import os
from pathlib import Path

import pendulum
from airflow.sdk import Param, dag, get_current_context, task

from tidemark.stream_config import load_streams, read_streams_file
from tidemark_airflow.accept_lost_operator import AcceptLostOperator
from tidemark_airflow.dag_target import DagTarget, triggered_dag_targets

CONF_PATH = os.environ.get("TIDEMARK_CONF", str(Path(__file__).resolve().parents[1] / "conf" / "streams.yaml"))


def accept_lost_dag(target: DagTarget):
    stream = target.stream

    @dag(
        dag_id=target.dag_id,
        schedule=None,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        tags=["tidemark", "retention", target.tag],
        params=_params(target),
        doc_md=_doc(target),
    )
    def accept_lost():
        @task
        def validate(params=None) -> dict:
            """Every param checked, and the range checked against the ledger and the log now,
            before any work; the error names the param or says what is lost instead."""
            return _checked_request(target, dict(params))

        AcceptLostOperator(
            task_id="accept_lost",
            stream=target.stream_name,
            conf_path=CONF_PATH,
            request=validate(),
            conn_id=stream.persist.spark_conn_id,
        )

    return accept_lost()


def _params(target: DagTarget) -> dict:
    """The trigger form; the validate task checks every param and says which one is wrong."""
    position = target.stream.source.position_type.name
    return {
        "stream": target.stream_param(),
        "partition": Param(0, type="integer", minimum=0, description="the partition the job stopped for"),
        "range": Param(
            "",
            type="string",
            description=f'the {position}s lost, "START-END", end exclusive, as the stopped job reported them',
        ),
        "by": Param("", type="string", description="who accepts the loss; empty: the user who triggered the run"),
        "reason": Param("", type="string", description="why the loss is accepted (kept with the ledger row)"),
    }


def _doc(target: DagTarget) -> str:
    return f"""
### Accept a loss to retention in {target.title}
When retention deleted a partition's next records before the live job read them, the job stops
(exit status 3) and the quality checks report the range **LOST**, naming the exact positions. If
the records cannot be restored from another copy, accept the loss here: give the **partition** and
the **range** the job reported. The range must start where the live job stands and end at or
before the log's earliest retained position now; anything else is refused and nothing is written.
The next persist run passes over exactly that range and reads on; the report, the watermark page
and `tidemark status` show it with who accepted it and when. A later loss stops the job again.
"""


def _checked_request(target: DagTarget, params: dict) -> dict:
    """The run's AcceptLostRequest as JSON, every param checked and the range checked against
    the lake and the log (AirflowFailException naming the problem), for this DAG's stream only."""
    from airflow.sdk.exceptions import AirflowFailException

    from connectors.accepted_losses import check_against_lake_and_log
    from tidemark.accepted_loss import AcceptLostRefused, AcceptLostRequestError, parse_accept_lost_form

    try:
        streams = load_streams(CONF_PATH)
        request = parse_accept_lost_form(params, streams, _who(params))
        refusal = target.refusal(request.stream, "accepts losses of")
        if refusal:
            raise AirflowFailException(refusal)
        check_against_lake_and_log(streams[request.stream], request)
    except (AcceptLostRequestError, AcceptLostRefused) as error:
        raise AirflowFailException(str(error)) from None
    return request.to_json()


def _who(params: dict) -> str:
    """``by`` when given, else the user who triggered the run, else the run's id."""
    if (params.get("by") or "").strip():
        return params["by"]
    dag_run = get_current_context()["dag_run"]
    return getattr(dag_run, "triggering_user_name", None) or dag_run.run_id


for _target in triggered_dag_targets("accept_lost", read_streams_file(CONF_PATH)):
    globals()[_target.dag_id] = accept_lost_dag(_target)
