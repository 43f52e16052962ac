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


# The DAGs a person (or another DAG) triggers with a stream in the run's conf: a family has one of
# each for all its members, the stream a param, instead of one per member (at 200 members, 800
# DAGs of params forms the dag-processor would serialize at every parse).
FAMILY_TRIGGERED_KINDS = ("recover", "redrive", "erase", "accept_lost", "backfill")


def triggered_dag_id(kind: str, stream: StreamConfig) -> str:
    """The DAG of ``kind`` (one of FAMILY_TRIGGERED_KINDS) that acts on ``stream``: its family's
    for a member, else its own."""
    if kind not in FAMILY_TRIGGERED_KINDS:
        raise ValueError(f"{kind!r} is not one of {FAMILY_TRIGGERED_KINDS}")
    if stream.family is not None:
        return family_triggered_dag_id(kind, stream.family)
    return f"tidemark_{kind}__{stream.name}"


def family_triggered_dag_id(kind: str, family: str) -> str:
    """The DAG of ``kind`` for every member of ``family``."""
    return f"tidemark_{kind}__family__{family}"


def sweep_dag_id(stream: StreamConfig) -> str:
    """The DAG whose runs sweep ``stream``: its family's for a member, else its own."""
    if stream.family is not None:
        return f"tidemark_sweep__family__{stream.family}"
    return f"tidemark_sweep__{stream.name}"
