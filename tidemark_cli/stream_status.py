"""`tidemark status`: a stream's partitions at a glance, as the watermark page shows them.

The overview (tidemark.stream_overview) is read from the lake with deltalake and from the log
with a short timeout (connectors.lake_reader): no Spark, an answer in about a second. One row per
partition, its status in colour (a stall status before ACTIVE/IDLE), then why each partition
that needs attention does.
"""

from __future__ import annotations

from functools import partial

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tidemark.event_time_text import format_event_time
from tidemark.stream_config import StreamConfig
from tidemark.stream_overview import StreamOverview
from tidemark_cli.command_failed import CommandFailed
from tidemark_cli.status_colours import status_text


def read_overview(stream: StreamConfig, now_ms: int | None = None) -> StreamOverview:
    """The stream's overview; CommandFailed saying what to run when the lake has no ledger yet."""
    from connectors.lake_reader import LedgerMissingError, read_stream_overview

    try:
        return read_stream_overview(stream, now_ms)
    except LedgerMissingError as error:
        raise CommandFailed(str(error)) from None


def print_status(console: Console, overview: StreamOverview) -> None:
    say = partial(console.print, soft_wrap=True)  # unwrapped: addresses and commands stay copyable
    say(
        Text.assemble(
            (f"Stream {overview.stream}", "bold"),
            f": global watermark G {_time(overview.global_watermark_ms)}, last sealed hour {_time(overview.last_sealed_hour_ms, 16)}, "
            f"as of {_time(overview.now_ms)} (UTC)",
        )
    )
    for note in overview.notes:
        say(Text(f"note: {note}", style="yellow"))
    if not overview.log_answered:
        say(Text("Is Kafka up? Start it with `tidemark up`.", style="yellow"))
    if overview.ledger_rows == 0:
        say(
            Text(
                "The ledger has no live rows yet: the persist job has not finished a batch for this stream.",
                style="yellow",
            )
        )
    table = status_table(overview)
    if console.measure(table, options=console.options.update_width(10_000)).maximum > console.width:
        table = status_table(overview, padding=0)  # a narrow terminal (80 columns): fits, times wrap
    console.print(table)
    for partition in overview.partitions:
        for accepted in partition.accepted_lost:
            say(Text(f"partition {partition.partition}: {accepted.describe('position')}", style="magenta"))
        if partition.needs_attention:
            say(
                Text.assemble(
                    f"partition {partition.partition} ", status_text(partition.status), f": {partition.reason}"
                )
            )


def status_table(overview: StreamOverview, padding: int = 1) -> Table:
    """One row per partition: status, read position, log end, lag, W_p, when its oldest unread
    record leaves the log, late and quarantined records. ``padding``: spaces either side of a cell."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, padding))
    # Times and long headings may wrap in a narrow terminal; statuses and figures never do.
    for name in ("partition", "status", "position", "log end", "lag"):
        table.add_column(name, justify="left" if name == "status" else "right", no_wrap=True)
    # At ten characters a time wraps between its date and its time of day, never inside them.
    table.add_column("watermark (UTC)", min_width=10)
    table.add_column("retention deadline", min_width=10)
    table.add_column("late", justify="right", no_wrap=True)
    table.add_column("quarantined", justify="right", no_wrap=True)
    for p in overview.partitions:
        table.add_row(
            str(p.partition),
            status_text(p.status),
            _number(p.position),
            _number(p.log_end),
            _number(p.lag),
            _time(p.partition_watermark_ms),
            _deadline(p.retention_deadline_ms, p.lag),
            _number(p.totals.late),
            _number(p.totals.quarantined),
        )
    return table


def _time(ms: int | None, characters: int = 19) -> str:
    """'2026-11-23 08:08:05' (or to the minute with 16): the headings say UTC."""
    return "–" if ms is None else format_event_time(ms).replace("T", " ")[:characters]


def _number(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


def _deadline(deadline_ms: int | None, lag: int | None) -> str:
    if not lag:
        return "nothing unread"
    return "unknown" if deadline_ms is None else _time(deadline_ms, 16)


def print_glances(console: Console, glances, total: int) -> None:
    """Every stream in one line (tidemark.stream_glance.StreamGlance), worst first: status in its
    colour, the worst partition and its lag, why, when it was checked."""
    say = partial(console.print, soft_wrap=True)
    shown = f"{len(glances)} of {total} streams" if len(glances) != total else f"{total} streams"
    say(Text.assemble((shown, "bold"), ", worst first, each as its last quality check found it:"))
    width = max((len(g.stream) for g in glances), default=6)
    for g in glances:
        partition = "" if g.partition is None else f"partition {g.partition}"
        lag = "" if g.lag is None else f"lag {g.lag:,}"
        say(
            Text.assemble(
                f"{g.stream:<{width}}  ",
                status_text(g.status),
                f"  {partition:<14}{lag:<14}{_time(g.checked_at_ms, 16) if g.checked_at_ms else 'never':<17}  {g.reason}",
            )
        )
