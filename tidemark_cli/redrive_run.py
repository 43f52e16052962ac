"""A quarantine re-drive from the command line: the redrive DAG's params, checked as its validate
task checks them, and what the run returns, for a person."""

from __future__ import annotations

import msgspec
from rich.console import Console

from tidemark.dag_ids import triggered_dag_id
from tidemark.redrive_request import RedriveRequest, RedriveRequestError, parse_redrive_form
from tidemark.redrive_result import RedriveResult
from tidemark.stream_config import StreamConfig
from tidemark_cli.param_usage_error import usage_error


def redrive_dag_id(stream: StreamConfig) -> str:
    return triggered_dag_id("redrive", stream)


def redrive_params(stream: StreamConfig, reason: str | None, hours: str | None) -> RedriveRequest:
    """The request the DAG run is triggered with, validated as the form's is; click.BadParameter
    (exit 2) naming the option when one is wrong."""
    try:
        return parse_redrive_form(
            {"stream": stream.name, "reason": reason, "hours": hours or ""}, {stream.name: stream}
        )
    except RedriveRequestError as error:
        raise usage_error(error) from None


def print_redrive_result(console: Console, result: dict | None) -> None:
    """What the redrive task returned: what moved where, what still does not decode."""
    if not result:
        console.print("The redrive task returned nothing; see its log in the Airflow UI.")
        return
    done = msgspec.convert(result, RedriveResult)
    window = f" written {done.hours_from}..{done.hours_to}" if done.hours_from else ""
    console.print(
        f"{done.stream}: {done.candidates:,} quarantined records of reason {done.reason}{window} were not yet in "
        f"the lake; moved {done.moved_to_events:,} to events and {done.moved_to_late:,} to late"
        + (f" ({done.already_moved:,} moved by another run meanwhile)" if done.already_moved else "")
        + f". Event hours re-checked: {', '.join(done.event_hours) or 'none'}.",
        highlight=False,
    )
    if done.still_refused:
        refused = ", ".join(f"{count:,} {reason}" for reason, count in done.still_refused.items())
        console.print(f"Still refused by the contract (left in quarantine): {refused}", highlight=False)
