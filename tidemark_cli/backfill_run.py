"""A backfill from the command line: the backfill DAG's params, checked as its validate task
checks them, and what the run returns, for a person."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tidemark.backfill_request import BackfillRequest, BackfillRequestError, parse_backfill_request
from tidemark.backfill_result import backfill_result_from
from tidemark.dag_ids import triggered_dag_id
from tidemark.event_time_text import format_event_time
from tidemark.reconciliation import HourComparison
from tidemark.stream_config import StreamConfig
from tidemark_cli.param_usage_error import usage_error


def backfill_dag_id(stream: StreamConfig) -> str:
    return triggered_dag_id("backfill", stream)


def backfill_params(
    stream: StreamConfig,
    start: str | None,
    end: str | None,
    partitions: str | None,
    target: str,
    shadow_name: str | None,
    compare: bool,
    now_ms: int,
    run_id: str,
) -> tuple[BackfillRequest, dict]:
    """The request and the DAG run's params (``conf``), validated by ``parse_backfill_request``
    with the run's own id, so the shadow set it names is the one the run will write.

    click.BadParameter (a usage error, exit 2) naming the option when a param is wrong: nothing
    is triggered. Like the DAG, ``compare`` only applies to a shadow target.
    """
    params = {
        "stream": stream.name,
        "start": start or "",
        "end": end or "",
        "partitions": partitions or "",
        "target": target,
        "shadow_name": shadow_name or "",
        "compare": compare,
    }
    try:
        request = parse_backfill_request(params, {stream.name: stream}, now_ms, run_id)
    except BackfillRequestError as error:
        raise usage_error(error) from None
    # The DAG's form params, not the request: its validate task makes the request from them (with
    # the run's own id), as it does for a person's form.
    conf = {
        "start": format_event_time(request.start_ms),
        "end": format_event_time(request.end_ms),
        "partitions": ",".join(str(p) for p in request.partitions),
        "target": "events" if request.shadow is None else "shadow",
        "shadow_name": request.shadow or "",
        "compare": request.compare,
    }
    if stream.family is not None:  # its family's DAG backfills the member its run names
        conf["stream"] = stream.name
    return request, conf


def print_backfill_result(console: Console, result: dict | None) -> None:
    """What the backfill task returned: counts, rate, and the comparison with live."""
    if not result:
        console.print("The backfill task returned nothing; see its log in the Airflow UI.")
        return
    try:
        done = backfill_result_from(result, "the backfill task's result")
    except ValueError as error:
        console.print(f"{escape(str(error))}; see the task's log in the Airflow UI.", highlight=False)
        return
    rate = done.records_per_second
    console.print(
        f"Backfilled [{done.start}, {done.end}) into {escape(done.target)}: "
        f"{done.records:,} records, {done.late:,} late, {done.quarantined:,} quarantined, "
        f"{done.batches} batches in {done.seconds} s" + (f", {rate:,} records/s" if rate else ""),
        highlight=False,
    )
    comparison = done.comparison
    if comparison is None:
        return
    differing = list(comparison.differing)
    console.print(
        f"Compared with live: {comparison.compared_hours} partition-hours, {comparison.records_live:,} "
        f"records in live, {comparison.records_shadow:,} in the backfill; "
        + ("[bold green]none differ[/]" if not differing else f"[bold red]{len(differing)} differ[/]"),
        highlight=False,
    )
    if differing:
        console.print(differing_hours_table(differing))


def differing_hours_table(differing: list[HourComparison]) -> Table:
    table = Table(title="Partition-hours where the backfill and live differ", title_justify="left")
    for name in (
        "partition",
        "hour (UTC)",
        "live",
        "backfill",
        "missing in live",
        "only in live",
        "late/quarantined in live",
    ):
        table.add_column(name, justify="left" if name == "hour (UTC)" else "right")
    for hour in differing:
        table.add_row(
            str(hour.partition),
            hour.hour,
            f"{hour.live:,}",
            f"{hour.shadow:,}",
            f"{hour.missing_in_live:,}",
            f"{hour.extra_in_live:,}",
            f"{hour.routed_differently:,}",
        )
    return table
