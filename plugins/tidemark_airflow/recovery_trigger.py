"""One recover DAG run per recovery request a task returned: the quality, sweep and backfill DAGs
all end the same way, so they share this block instead of three copies of it.

Each request goes on as its own typed value: decoded by ``RecoveryRequest.from_json`` in the
sending DAG (a malformed one fails there, naming the field, not in a run of the recover DAG)
and triggered with its ``to_json()`` as the run's conf, which the recover DAG's validate task
decodes the same way.
"""

from __future__ import annotations

from typing import Any

from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
from airflow.sdk import task


def trigger_recovery(stream: str, result: Any, within: str | None = None) -> Any:
    """Tasks ``recovery_requests`` (the requests of ``result``, an XComArg of a task returning a
    mapping with "recovery_requests", or with ``within`` holding it, e.g. the backfill's
    "comparison", which may be null) and ``trigger_recovery`` (one tidemark_recover__<stream>
    run per request, mapped). Call inside a DAG; returns the mapped trigger task."""

    @task
    def recovery_requests(result: dict) -> list[dict]:
        from tidemark.recovery_request import RecoveryRequest

        holder = result if within is None else (result.get(within) or {})
        return [RecoveryRequest.from_json(request).to_json() for request in holder.get("recovery_requests", [])]

    return TriggerDagRunOperator.partial(
        task_id="trigger_recovery", trigger_dag_id=f"tidemark_recover__{stream}"
    ).expand(conf=recovery_requests(result))
