"""Accepting a loss from the command line: the accept-lost DAG's params, checked as its validate
task checks them (the form, then the range against the ledger and the log now), and what the run
returns, for a person."""

from __future__ import annotations

import getpass

import click
import msgspec
from rich.console import Console

from tidemark.accepted_loss import (
    AcceptLostRefused,
    AcceptLostRequest,
    AcceptLostRequestError,
    AcceptLostResult,
    parse_accept_lost_form,
)
from tidemark.dag_ids import triggered_dag_id
from tidemark.stream_config import StreamConfig
from tidemark_cli.param_usage_error import usage_error


def accept_lost_dag_id(stream: StreamConfig) -> str:
    return triggered_dag_id("accept_lost", stream)


def accept_lost_params(
    stream: StreamConfig, partition: str | None, range_text: str | None, by: str | None, reason: str | None
) -> AcceptLostRequest:
    """The request the DAG run is triggered with, validated as the form's is and checked against
    the lake and the log; click.BadParameter / click.UsageError (exit 2) saying what is wrong,
    before anything is triggered. ``by``: default the OS user."""
    params = {"stream": stream.name, "partition": partition, "range": range_text, "reason": reason}
    try:
        request = parse_accept_lost_form(params, {stream.name: stream}, by or getpass.getuser())
    except AcceptLostRequestError as error:
        raise usage_error(error) from None
    from connectors.accepted_losses import check_against_lake_and_log

    try:
        check_against_lake_and_log(stream, request)
    except AcceptLostRefused as error:
        raise click.UsageError(str(error)) from None
    return request


def print_accept_lost_result(console: Console, result: dict | None) -> None:
    """What the accept-lost task returned: the range, who and when."""
    if not result:
        console.print("The accept_lost task returned nothing; see its log in the Airflow UI.")
        return
    done = msgspec.convert(result, AcceptLostResult)
    said = "accepted as lost" if done.written else "was already accepted as lost"
    console.print(
        f"{done.stream}, partition {done.partition}: [{done.start}, {done.end}) {said} by {done.accepted_by} at "
        f"{done.accepted_at}. The next persist run reads on after it; a later loss stops it again.",
        highlight=False,
    )
