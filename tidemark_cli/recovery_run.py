"""A recovery from the command line: the recover DAG's params, checked as its validate task checks
them, and what the run returns, for a person."""

from __future__ import annotations

from rich.console import Console

from tidemark.recovery_request import RecoveryRequestError, parse_recovery_request
from tidemark.stream_config import StreamConfig
from tidemark_cli.param_usage_error import usage_error


def recover_dag_id(stream: StreamConfig) -> str:
    return f"tidemark_recover__{stream.name}"


def recovery_params(stream: StreamConfig, partition: str | None, ranges: str | None, reason: str | None) -> dict:
    """The DAG run's params (a RecoveryRequest's JSON: ranges sorted and merged), validated by
    ``parse_recovery_request``; click.BadParameter (exit 2) naming the option when one is wrong."""
    params = {"stream": stream.name, "partition": partition, "ranges": ranges or "", "reason": reason}
    try:
        return parse_recovery_request(params, {stream.name: stream}).to_json()
    except RecoveryRequestError as error:
        raise usage_error(error) from None


def print_recovery_result(console: Console, result: dict | None) -> None:
    """What the recover task returned: the ranges replayed, records inserted, the hours re-checked."""
    if not result:
        console.print("The recover task returned nothing; see its log in the Airflow UI.")
        return
    recovered = ", ".join(f"{r['start']}-{r['end']} ({r['inserted']:,} inserted)" for r in result.get("recovered", [])) or "none"
    console.print(
        f"Partition {result['partition']} of {result['stream']}: recovered {recovered}; {result['inserted']:,} records "
        f"inserted in all. Event hours re-checked: {', '.join(result.get('event_hours') or []) or 'none'}.",
        highlight=False,
    )
    if result.get("lost"):
        lost = ", ".join(f"{start}-{end}" for start, end in result["lost"])
        console.print(f"[bold red]LOST[/] (left the log before they were persisted): offsets {lost}", highlight=False)
