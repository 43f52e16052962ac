"""A recovery from the command line: the recover DAG's params, checked as its validate task checks
them, and what the run returns, for a person."""

from __future__ import annotations

import msgspec
from rich.console import Console

from tidemark.dag_ids import triggered_dag_id
from tidemark.recovery_request import RecoveryRequest, RecoveryRequestError, parse_recovery_form
from tidemark.recovery_result import RecoveryResult
from tidemark.stream_config import StreamConfig
from tidemark_cli.param_usage_error import usage_error


def recover_dag_id(stream: StreamConfig) -> str:
    return triggered_dag_id("recover", stream)


def recovery_params(
    stream: StreamConfig, partition: str | None, ranges: str | None, reason: str | None, restart_live: bool = False
) -> RecoveryRequest:
    """The request the DAG run is triggered with (its ``to_json()`` is the run's conf: ranges
    sorted and merged), validated by ``parse_recovery_form`` as the form's are; click.BadParameter
    (exit 2) naming the option when one is wrong."""
    params = {
        "stream": stream.name,
        "partition": partition,
        "ranges": ranges or "",
        "reason": reason,
        "restart_live": restart_live,
    }
    try:
        return parse_recovery_form(params, {stream.name: stream})
    except RecoveryRequestError as error:
        raise usage_error(error) from None


def print_recovery_result(console: Console, result: dict | None) -> None:
    """What the recover task returned: the ranges replayed, records inserted, the hours re-checked."""
    if not result:
        console.print("The recover task returned nothing; see its log in the Airflow UI.")
        return
    done = msgspec.convert(result, RecoveryResult)
    recovered = ", ".join(f"{r.start}-{r.end} ({r.inserted:,} inserted)" for r in done.recovered) or "none"
    console.print(
        f"Partition {done.partition} of {done.stream}: recovered {recovered}; {done.inserted:,} records "
        f"inserted in all. Event hours re-checked: {', '.join(done.event_hours) or 'none'}.",
        highlight=False,
    )
    if done.lost:
        lost = ", ".join(f"{start}-{end}" for start, end in done.lost)
        console.print(f"[bold red]LOST[/] (left the log before they were persisted): offsets {lost}", highlight=False)
