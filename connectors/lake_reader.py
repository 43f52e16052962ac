"""A stream's state read from its Delta tables without Spark (``deltalake``), for the watermark
page and ``tidemark status``: they must answer in well under a second, and a JVM takes seconds
to start.

It reads the tables delta-spark 4.4 writes (protocol 1,2; see STACK_FACTS.md): the ledger's live
rows of the charted window, the newest seal, the late and quarantine rows per partition. The log
is asked, with a short timeout, for its readable ends and for the record at each lagging
partition's position (its log time plus the retention is when it leaves the log); when the log
does not answer, the overview says so and shows the ledger's newest figures.

A Kinesis stream's shards are its partitions. Sequence numbers are sparse (their differences
count nothing) and Kinesis tells no shard's newest sequence number, so for Kinesis the log end
handed to the overview is "unread records exist" (position + 1) or not (position): the one-shot
probe of connectors.log_bounds at each shard's position now, the ledger's log end past its
position for the rows charted. The overview's lag of a shard is therefore 1 (records unread) or
0 (caught up), never a count.
"""

from __future__ import annotations

import time

from tidemark.dag_ids import persist_dag_id
from tidemark.log_position import position_value
from tidemark.offset_coverage import LIVE_MODE
from tidemark.stream_config import StreamConfig
from tidemark.stream_overview import LedgerPoint, PartitionTotals, StreamOverview, build_stream_overview

DAY_MS = 86_400_000
CHART_POINTS = 300  # per partition line: more than a chart's width shows

_LEDGER_COLUMNS = [
    "source_partition",
    "mode",
    "end_offset",
    "log_end_offset",
    "partition_watermark",
    "global_watermark",
    "partition_status",
    "read_time",
    "late",
    "quarantined",
]


class LedgerMissingError(RuntimeError):
    """The stream has no ledger table yet: the persist job has not run against this lake."""


def read_stream_overview(
    stream: StreamConfig,
    now_ms: int | None = None,
    window_ms: int = 7 * DAY_MS,
    log_timeout_s: float = 2.0,
    ask_log: bool = True,
) -> StreamOverview:
    """The stream's overview at ``now_ms`` (default: now) from the lake, charting the live
    ledger rows of the last ``window_ms``. Raises LedgerMissingError when there is no ledger."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    ledger = _table(stream, "ledger")
    if ledger is None:
        raise LedgerMissingError(
            f"stream {stream.name!r} has no ledger at {stream.table_path('ledger')}: the persist job has not written "
            f"to this lake yet (run the {persist_dag_id(stream)} DAG, or check lake.root)"
        )
    from connectors.accepted_losses import read_accepted_losses

    rules = stream.quality.stall_rules()
    live = ledger.to_pyarrow_table(columns=_LEDGER_COLUMNS, filters=[("mode", "=", LIVE_MODE)])
    sparse = not stream.source.position_type.dense
    points = _charted_points(live, now_ms - window_ms, now_ms - rules.stall_timeout_ms, rules.window, sparse=sparse)
    totals = _totals(live)
    partitions = {p.partition for p in points} | set(stream.source.fixed_partitions or ())
    log_ends, oldest_unread, notes = None, None, []
    if ask_log:
        try:
            log_ends, oldest_unread, notes = _ask_log(stream, points, log_timeout_s)
            partitions |= set(log_ends)
        except Exception as error:  # the page must still show the lake when the log is away
            notes = [
                f"the log at {stream.source.address} did not answer ({error}): log ends and lag are the newest ledger rows'"
            ]
    overview = build_stream_overview(
        stream.name,
        points,
        totals,
        sorted(partitions),
        rules,
        stream.retention_ms,
        now_ms,
        last_sealed_hour_ms=last_sealed_hour_ms(stream),
        log_ends=log_ends,
        oldest_unread_ms=oldest_unread,
        positions=stream.source.position_type,
        accepted_lost=read_accepted_losses(stream),
    )
    return overview if not notes else _with_notes(overview, notes)


def last_global_watermark_ms(stream: StreamConfig) -> int | None:
    """The G the live job last persisted under (G never moves back: the largest in its ledger
    rows); None without a ledger or before the first batch that had one."""
    ledger = _table(stream, "ledger")
    if ledger is None:
        return None
    watermarks = ledger.to_pyarrow_table(columns=["global_watermark"], filters=[("mode", "=", LIVE_MODE)])[
        "global_watermark"
    ]
    return _newest_ms(watermarks)


def table_properties(path: str) -> dict[str, str]:
    """The table properties (metadata configuration) of the Delta table at ``path``."""
    from connectors.lake_storage import open_delta_table

    return dict(open_delta_table(path).metadata().configuration)


def _table(stream: StreamConfig, name: str):
    """The Delta table, or None when there is none at its path (local, or S3 with the storage
    settings of connectors.lake_storage)."""
    from deltalake.exceptions import TableNotFoundError

    from connectors.lake_storage import open_delta_table

    try:
        return open_delta_table(stream.table_path(name))
    except TableNotFoundError:
        return None


def _charted_points(
    live, since_ms: int, stall_since_ms: int, window_rows: int, most: int = CHART_POINTS, sparse: bool = False
) -> list[LedgerPoint]:
    """The live rows the overview needs, thinned before they become Python objects (a month of
    64 partitions is half a million rows): per partition, at most about ``most`` rows evenly
    spread over those read at or after ``since_ms``, plus every row of the stall rules (the
    newest ``window_rows``, and all read at or after ``stall_since_ms``), plus its newest row
    when it has none since ``since_ms`` (a partition the job stopped reading long ago still
    shows where it stands). Thinning cannot change a stall verdict: positions and log ends only
    grow, so a position equal at two rows was equal at every row between them."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    live = live.filter(pc.is_valid(live["read_time"]))
    if live.num_rows == 0:
        return []
    read_ms = pc.divide(pc.cast(pc.cast(live["read_time"], pa.timestamp("us", tz="UTC")), pa.int64()), 1000)
    live = live.append_column("read_ms", read_ms).sort_by([("source_partition", "ascending"), ("read_ms", "ascending")])
    partition = live["source_partition"].to_numpy()
    read = live["read_ms"].to_numpy()
    starts = np.flatnonzero(np.r_[True, partition[1:] != partition[:-1]])
    ends = np.r_[starts[1:], len(partition)]
    keep = np.zeros(len(partition), dtype=bool)
    for start, end in zip(starts, ends):
        recent = start + np.searchsorted(read[start:end], since_ms)
        step = max(1, (end - recent) // most)
        keep[recent:end:step] = True
        keep[max(start, end - window_rows) : end] = True
        keep[start + np.searchsorted(read[start:end], stall_since_ms) : end] = True
        keep[end - 1] = True
    return _points(live.filter(pa.array(keep)), sparse)


def _points(rows, sparse: bool = False) -> list[LedgerPoint]:
    columns = {name: _millis_or_values(rows[name]) for name in _LEDGER_COLUMNS if name not in ("late", "quarantined")}
    if sparse:  # sequence-number keys → ints; the log end → "unread records exist" (see the module)
        ends = [position_value(end) for end in columns["end_offset"]]
        columns["log_end_offset"] = [
            None if log_end is None else (end + 1 if position_value(log_end) > end else end)
            for end, log_end in zip(ends, columns["log_end_offset"])
        ]
        columns["end_offset"] = ends
    return [
        LedgerPoint(partition, read_time, end, log_end if log_end is not None else end, watermark, g, status or "")
        for partition, read_time, end, log_end, watermark, g, status in zip(
            columns["source_partition"],
            columns["read_time"],
            columns["end_offset"],
            columns["log_end_offset"],
            columns["partition_watermark"],
            columns["global_watermark"],
            columns["partition_status"],
        )
    ]


def _millis_or_values(column) -> list:
    """A timestamp column as ms since the epoch (None stays None), any other as Python values."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_timestamp(column.type):
        micros = pc.cast(pc.cast(column, pa.timestamp("us", tz="UTC")), pa.int64())
        return [None if v is None else v // 1000 for v in micros.to_pylist()]
    return column.to_pylist()


def _totals(live) -> dict[int, PartitionTotals]:
    """Late and quarantined records per partition, summed over the live rows: the live job reads
    every offset once (its ranges are contiguous), so each record is counted once; a recovery's
    rows are not added, as live reads the same offsets again and counts them then."""
    summed = live.group_by("source_partition").aggregate([("late", "sum"), ("quarantined", "sum")])
    return {
        p: PartitionTotals(late=late or 0, quarantined=quarantined or 0)
        for p, late, quarantined in zip(
            summed["source_partition"].to_pylist(),
            summed["late_sum"].to_pylist(),
            summed["quarantined_sum"].to_pylist(),
        )
    }


def last_sealed_hour_ms(stream: StreamConfig) -> int | None:
    """The start (ms, UTC) of the newest hour in the stream's seals table; None without one."""
    seals = _table(stream, "seals")
    return None if seals is None else _newest_ms(seals.to_pyarrow_table(columns=["hour"])["hour"])


def _newest_ms(times) -> int | None:
    """The largest of a timestamp column, in ms; None when it holds none."""
    return max((ms for ms in _millis_or_values(times) if ms is not None), default=None)


def _ask_log(
    stream: StreamConfig, points: list[LedgerPoint], timeout_s: float
) -> tuple[dict[int, int], dict[int, int | None], list[str]]:
    """The log's ends now against the newest ledger point per partition, per lagging partition
    the log time of its first unread record, and notes for a person
    (tidemark.partitioned_log.PartitionedLog.unread_now). A FINISHED partition is not asked."""
    from connectors.partitioned_logs import open_log

    newest: dict[int, LedgerPoint] = {}
    for point in sorted(points, key=lambda p: p.read_time_ms):
        newest[point.partition] = point
    positions = {p: point.position for p, point in newest.items()}
    finished = {p for p, point in newest.items() if point.reading_status == "FINISHED"}
    log = open_log(stream.source.connection(), timeout_s=timeout_s)
    try:
        unread = log.unread_now(positions, finished)
    finally:
        log.close()
    return unread.ends, unread.oldest_unread_ms, list(unread.notes)


def _with_notes(overview: StreamOverview, notes: list[str]) -> StreamOverview:
    from dataclasses import replace

    return replace(overview, notes=tuple(notes))
