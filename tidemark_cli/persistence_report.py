"""The persistence report as a person reads it (`tidemark report STREAM --persistence`, and the
demo): per partition the offsets in the log, those without a record, records persisted, late,
quarantined, and the offsets not yet read; per Kinesis shard its state, records read, persisted,
late, quarantined and how far behind the shard's tip; then the hours sealed. ``--json`` figures
are the same, for machines: a list with one object per partition (shard).

The figures (tidemark.persistence_report) are read without Spark (connectors.persistence_figures):
the lake with pyarrow, the log with its own client, in about a second and without a JVM.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from tidemark.persistence_report import LakeFigures, PartitionReport, ShardReport
from tidemark.stream_config import StreamConfig
from tidemark_cli.command_failed import CommandFailed


def print_persistence_report(stream: StreamConfig, json_file: Path | None = None, log=None) -> str:
    """Print ``stream``'s report, write its figures to ``json_file`` when given; returns the text.
    ``log``: an opened log to ask instead of the stream's (connectors.persistence_figures).
    CommandFailed, in one line, when the lake has no ledger yet or the log does not answer."""
    from connectors.lake_reader import LedgerMissingError
    from connectors.persistence_figures import read_lake_figures, read_report_rows
    from tidemark.partitioned_log import LogUnreachableError

    try:
        lake = read_lake_figures(stream)
        reports = read_report_rows(stream, lake, log)
    except (LedgerMissingError, LogUnreachableError) as error:
        raise CommandFailed(str(error)) from None
    dense = stream.source.position_type.dense
    text = (render if dense else render_kinesis)(stream, reports, sealing_summary(lake))
    print(text)
    if json_file is not None:
        json_file.parent.mkdir(parents=True, exist_ok=True)
        json_file.write_text(json.dumps(report_figures(reports), indent=2) + "\n")
    return text


def report_figures(reports: list[PartitionReport] | list[ShardReport]) -> list[dict]:
    """The JSON figures: a partition's fields with its ``in_log`` and ``lag``; a shard's fields."""
    return [
        {**asdict(r), "in_log": r.in_log, "lag": r.lag} if isinstance(r, PartitionReport) else asdict(r)
        for r in reports
    ]


def sealing_summary(lake: LakeFigures) -> str:
    """One line: the hours sealed so far and the newest of them."""
    if not lake.sealed_hours:
        return "sealed hours: none yet"
    latest = datetime.fromtimestamp(lake.latest_sealed_hour_ms / 1000, UTC)
    return f"sealed hours: {lake.sealed_hours}, the latest [{latest:%Y-%m-%d %H:00}, +1h) UTC"


def render(stream: StreamConfig, reports: list[PartitionReport], sealing: str) -> str:
    columns = (
        ("partition", 9),
        ("offsets", 9),
        ("no record", 9),
        ("persisted", 10),
        ("late", 6),
        ("quarantined", 11),
        ("not yet read", 12),
    )
    header = _row(columns, [name for name, _ in columns])
    lines = [f"stream {stream.name} (topic {stream.source.topic})", header, "-" * len(header)]
    attributes = ("in_log", "without_data", "persisted", "late", "quarantined", "lag")
    for r in reports:
        lines.append(_row(columns, [r.partition, *(getattr(r, a) for a in attributes)]))
    lines.append("-" * len(header))
    lines.append(_row(columns, ["total", *(sum(getattr(r, a) for r in reports) for a in attributes)]))
    if any(r.without_data for r in reports):
        lines.append(
            "offsets are not records: 'no record' counts commit and abort markers, aborted transactions and "
            "compacted offsets the job read past"
        )
    lines.append(sealing)
    return "\n".join(lines)


def render_kinesis(stream: StreamConfig, reports: list[ShardReport], sealing: str) -> str:
    columns = (
        ("shard", 22),
        ("state", 8),
        ("read", 8),
        ("persisted", 10),
        ("late", 6),
        ("quarantined", 11),
        ("behind", 10),
    )
    header = _row(columns, [name for name, _ in columns])
    lines = [f"stream {stream.name} ({stream.source.description})", header, "-" * len(header)]
    for r in reports:
        behind = "" if r.millis_behind_latest is None else f"{r.millis_behind_latest / 1000:.1f} s"
        lines.append(_row(columns, [r.shard_id, r.state, r.read, r.persisted, r.late, r.quarantined, behind]))
    lines.append("-" * len(header))
    totals = (sum(getattr(r, a) for r in reports) for a in ("read", "persisted", "late", "quarantined"))
    lines.append(_row(columns, ["total", "", *totals, ""]))
    lines.append(
        "read = persisted + late + quarantined; 'behind' is Kinesis's MillisBehindLatest at the lake's position"
    )
    lines.append(sealing)
    return "\n".join(lines)


def _row(columns: tuple[tuple[str, int], ...], values) -> str:
    """One line of a report's table: each value right-aligned to its column's width."""
    return " ".join(f"{value:>{width}}" for value, (_, width) in zip(values, columns, strict=True))
