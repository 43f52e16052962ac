"""The Airflow DAG ids tidemark gives a stream's DAGs, in one place: the DAG files name their DAGs
with these, and every task, page and message that points at another DAG asks here."""

from __future__ import annotations

from tidemark.stream_config import StreamConfig


def family_persist_dag_id(family: str) -> str:
    """The persist DAG of a family whose members run bounded: one tick for all of them."""
    return f"tidemark_persist__family__{family}"


def persist_dag_id(stream: StreamConfig) -> str:
    """The DAG whose run persists ``stream``: its family's tick for a member of a family whose
    members run bounded (available_now), else its own."""
    if stream.family is not None and stream.persist.mode == "available_now":
        return family_persist_dag_id(stream.family)
    return f"tidemark_persist__{stream.name}"
