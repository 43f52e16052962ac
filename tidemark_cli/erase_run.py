"""An erasure from the command line: the erasure DAG's params, checked as its validate task checks
them, and what the run returns, for a person."""

from __future__ import annotations

import msgspec
from rich.console import Console

from tidemark.dag_ids import triggered_dag_id
from tidemark.erasure_request import ErasureRequest, ErasureRequestError, parse_erase_form
from tidemark.erasure_result import ErasureResult
from tidemark.stream_config import StreamConfig
from tidemark_cli.param_usage_error import usage_error


def erase_dag_id(stream: StreamConfig) -> str:
    return triggered_dag_id("erase", stream)


def erase_params(stream: StreamConfig, where: str | None, by: str | None, reason: str | None) -> ErasureRequest:
    """The request the DAG run is triggered with, validated as the form's is; click.BadParameter
    (exit 2) naming the option when one is wrong."""
    try:
        return parse_erase_form(
            {"stream": stream.name, "where": where, "requested_by": by, "reason": reason or ""}, {stream.name: stream}
        )
    except ErasureRequestError as error:
        raise usage_error(error) from None


def print_erase_result(console: Console, result: dict | None) -> None:
    """What the erase task returned: what was erased from where."""
    if not result:
        console.print("The erase task returned nothing; see its log in the Airflow UI.")
        return
    done = msgspec.convert(result, ErasureResult)
    console.print(done.summary() + f". Erasure {done.erasure_id}, asked by {done.requested_by}.", highlight=False)
    if done.not_yet_persisted:
        where = ", ".join(f"partition {p} (live at {a}, log end {b})" for p, (a, b) in done.not_yet_persisted.items())
        console.print(f"Not read by live yet, so not erased yet: {where}. Run it again once live has caught up.")
