"""One recover DAG run per recovery request a task returned: the quality, sweep and backfill DAGs
all end the same way, so they share this block instead of three copies of it.

Each request goes on as its own typed value: decoded with the sending task's result, by that
result's type (a QualitySummary, a BackfillResult), in the sending DAG (a malformed one fails
there, naming the field, not in a run of the recover DAG) and triggered with its ``to_json()`` as
the run's conf, which the recover DAG's validate task decodes the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
from airflow.sdk import task

from tidemark.dag_ids import triggered_dag_id

if TYPE_CHECKING:
    from tidemark.recovery_request import RecoveryRequest
    from tidemark.stream_config import StreamConfig

# Reads a task's result (its XCom) as its own type and returns the recoveries it asks for;
# ValueError naming the result when it is not one.
RequestsIn = Callable[[Any], "tuple[RecoveryRequest, ...]"]


def trigger_recovery(
    stream: StreamConfig, result: Any, requests_in: RequestsIn | None = None, trigger_rule: str = "all_success"
) -> Any:
    """Tasks ``recovery_requests`` (the requests of ``result``, an XComArg of a task's typed
    result, read by ``requests_in``: by default a quality summary's, ``backfill_requests`` for the
    backfill's comparison with live) and ``trigger_recovery`` (one tidemark_recover__<stream> run
    per request, mapped; a family member's go to its family's recover DAG, the request naming the
    member). ``trigger_rule`` "all_done" for a mapped ``result`` (a family's members, one task
    each): the members whose task succeeded are recovered though another's failed. Call inside a
    DAG; returns the mapped trigger task."""
    requests_of = requests_in or quality_requests

    @task(trigger_rule=trigger_rule)
    def recovery_requests(result: Any) -> list[dict]:
        from airflow.sdk.exceptions import AirflowFailException

        try:
            requests = requests_of(result)
        except ValueError as error:
            raise AirflowFailException(str(error)) from None
        return [request.to_json() for request in requests]

    return TriggerDagRunOperator.partial(
        task_id="trigger_recovery", trigger_dag_id=triggered_dag_id("recover", stream)
    ).expand(conf=recovery_requests(result))


def quality_requests(result: Any) -> tuple[RecoveryRequest, ...]:
    """The recovery requests of a quality or sweep task's result (a QualitySummary's JSON)."""
    from tidemark.quality_summary import quality_summary_from

    return quality_summary_from(result, "the quality task's result").recovery_requests


def backfill_requests(result: Any) -> tuple[RecoveryRequest, ...]:
    """The recovery requests of a backfill task's result (a BackfillResult's JSON): those of its
    comparison with live, none when it was not compared."""
    from tidemark.backfill_result import backfill_result_from

    return backfill_result_from(result, "the backfill task's result").recovery_requests


def family_quality_requests(result: Any) -> tuple[RecoveryRequest, ...]:
    """The recovery requests of a family's quality task (tidemark_airflow.family_quality_operator):
    every checked member's, each naming its member."""
    summaries = (result or {}).get("summaries", {})
    return tuple(request for name in sorted(summaries) for request in quality_requests(summaries[name]))


def each_members(requests_of: RequestsIn) -> RequestsIn:
    """``requests_of`` over the results of a task mapped over a family's members (one per member
    whose task succeeded), every member's requests in one tuple."""

    def requests(results: Any) -> tuple[RecoveryRequest, ...]:
        return tuple(request for result in (results or ()) if result is not None for request in requests_of(result))

    return requests
