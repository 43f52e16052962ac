"""The Spark-free look before a scheduled persist run: the log's bounds now (Kafka's admin
ListOffsets, or one probe per Kinesis shard) against the lake's ledger (``deltalake``), judged by
tidemark.nothing_new. It takes about a second; a JVM takes ten before it reads anything.

``look_before_persist(stream)`` never guesses: a ledger that cannot be read, or a log that does
not answer, is an answer of its own ("run the job, because ...").
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from connectors.error_line import one_line
from tidemark.furthest_live_row import FURTHEST_FIRST, furthest_key, furthest_per_partition
from tidemark.log_position import position_value
from tidemark.nothing_new import LedgerPartition, LogPartitionNow, PersistLook, look_for_work
from tidemark.offset_coverage import LIVE_MODE
from tidemark.partition_status import PartitionStatus
from tidemark.stream_config import StreamConfig

# The ledger columns the look needs: where each partition stands and how.
_COLUMNS = ["source_partition", "end_offset", "read_time", "step_id", "partition_status", "global_watermark"]


@dataclass(frozen=True)
class LedgerStanding:
    """The live ledger's furthest row per partition, and G (ms, UTC; None before the first)."""

    partitions: dict[int, LedgerPartition]
    global_watermark_ms: int | None


def look_before_persist(
    stream: StreamConfig, now_ms: int | None = None, log_timeout_s: float = 10.0, log_opener=None
) -> PersistLook:
    """Whether a live run of ``stream`` now has anything to do (tidemark.nothing_new). Reading
    errors are answered "run the job" with the error in the reason, never "nothing new".
    ``log_opener(stream, timeout_s)``: how the stream's log is opened (default: its own clients,
    closed after; a family's look passes connectors.family_look's, which share them)."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    try:
        standing = read_ledger_standing(stream)
    except Exception as error:  # any reading error: the job decides, as it always did
        return PersistLook(False, f"the ledger could not be read ({one_line(error)})")
    if not standing.partitions:
        return look_for_work({}, {}, None, stream.event_time.idle_timeout_ms, now_ms)
    try:
        log = _log_now(stream, standing, log_timeout_s, log_opener)
    except Exception as error:
        return PersistLook(False, f"the log did not answer ({one_line(error)})")
    return look_for_work(
        standing.partitions,
        log,
        standing.global_watermark_ms,
        stream.event_time.idle_timeout_ms,
        now_ms,
        stream.source.position_type.name,
    )


def read_ledger_standing(stream: StreamConfig) -> LedgerStanding:
    """Each partition's furthest live ledger row (tidemark.furthest_live_row, the rule the live job
    resumes from) and the largest G of the live rows.
    No ledger table: no partitions. Raises deltalake's and pyarrow's errors when it cannot be read."""
    import pyarrow.compute as pc
    from deltalake.exceptions import TableNotFoundError

    from connectors.lake_storage import open_delta_table

    path = stream.table_path("ledger")
    try:
        ledger = open_delta_table(path)
    except TableNotFoundError:
        return LedgerStanding({}, None)
    live = _live_rows(ledger, path)
    if live.num_rows == 0:
        return LedgerStanding({}, None)
    newest_g = pc.max(live["global_watermark"]).as_py()
    rows = _at_furthest_end(live).select(["source_partition", *FURTHEST_FIRST, "partition_status"]).to_pylist()
    furthest = furthest_per_partition(
        rows,
        partition=lambda row: row["source_partition"],
        key=lambda row: furthest_key(position_value(row["end_offset"]), row["read_time"], row["step_id"]),
    )
    partitions = {
        partition: LedgerPartition(position_value(row["end_offset"]), PartitionStatus(row["partition_status"]))
        for partition, row in furthest.items()
    }
    return LedgerStanding(partitions, None if newest_g is None else int(newest_g.timestamp() * 1000))


def _live_rows(ledger, path: str):
    """The ledger's live rows, ``_COLUMNS`` only (connectors.delta_scan.read_rows: several times
    cheaper than deltalake's scan on this small table)."""
    import pyarrow.dataset as ds

    from connectors.delta_scan import read_rows

    return read_rows(ledger, path, [*_COLUMNS, "mode"], ds.field("mode") == LIVE_MODE).select(_COLUMNS)


def _at_furthest_end(live):
    """The live rows that end at their partition's largest end position: the only candidates for
    its furthest row (the rule ranks the end first). Narrowed in Arrow, so the rows that reach
    Python are a handful whatever the ledger's age, not one per batch ever persisted; positions
    compare as numbers in both column types (BIGINT offsets, fixed-width sequence-number keys)."""
    import pyarrow.compute as pc

    ends = live.group_by("source_partition").aggregate([("end_offset", "max")])
    joined = live.join(ends, "source_partition")
    return joined.filter(pc.equal(joined["end_offset"], joined["end_offset_max"]))


def _log_now(
    stream: StreamConfig, standing: LedgerStanding, timeout_s: float, log_opener
) -> dict[int, LogPartitionNow]:
    """The log's partitions now against the ledger's rows, asked of the stream's log."""
    from connectors.partitioned_logs import open_log

    if log_opener is not None:
        log = log_opener(stream, timeout_s)
    else:
        log = open_log(stream.source.connection(), timeout_s=timeout_s)
    try:
        return log.look_before_run(standing.partitions)
    finally:
        log.close()
