"""The figures of the persistence report (tidemark.persistence_report), read without Spark: the
lake's tables with pyarrow over their Delta snapshots (connectors.delta_scan), the log with its
own client. It answers in about a second; the Spark job it replaces took 40 s or more.

``read_lake_figures`` needs only the lake; ``read_report_rows`` asks the log too, and fails with
one line naming the log when the log does not answer (LogUnreachableError), never after a
client's whole retry timeout when a Kafka broker refuses connections.
"""

from __future__ import annotations

from contextlib import contextmanager

from connectors.error_line import one_line
from connectors.kinesis_api import KinesisUnavailableError
from tidemark.dag_ids import persist_dag_id
from tidemark.offset_coverage import LIVE_MODE
from tidemark.partitioned_log import LogUnreachableError
from tidemark.persistence_report import LakeFigures, PartitionReport, ShardReport, partition_reports, shard_reports
from tidemark.stream_config import StreamConfig

# Kinesis is asked one record per shard at the lake's position: its answer carries MillisBehindLatest.
_PROBE_RECORDS = 1


def read_lake_figures(stream: StreamConfig) -> LakeFigures:
    """The lake's half of ``stream``'s report (tidemark.persistence_report.LakeFigures).
    Raises connectors.lake_reader.LedgerMissingError when the stream has no ledger yet; a table
    other than the ledger that does not exist counts no rows."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    from connectors.delta_scan import read_rows
    from connectors.lake_reader import LedgerMissingError
    from connectors.persist_look import read_ledger_standing

    ledger = _table(stream, "ledger")
    if ledger is None:
        raise LedgerMissingError(
            f"stream {stream.name!r} has no ledger at {stream.table_path('ledger')}: the persist job has not written "
            f"to this lake yet (run the {persist_dag_id(stream)} DAG, or check lake.root)"
        )
    standing = read_ledger_standing(stream)
    dense = stream.source.position_type.dense
    columns = ["source_partition", "data_records", "records", "late", "quarantined"]
    columns += ["start_offset", "end_offset"] if dense else []
    live = read_rows(ledger, stream.table_path("ledger"), [*columns, "mode"], ds.field("mode") == LIVE_MODE)
    # Rows written before the ledger counted data records count the records they persisted.
    data_records = pc.coalesce(live["data_records"], pc.add(pc.add(live["records"], live["late"]), live["quarantined"]))
    summed = {"read": data_records}
    if dense:
        summed["without_data"] = pc.subtract(pc.subtract(live["end_offset"], live["start_offset"]), data_records)
    sums = {name: _summed(live["source_partition"], values) for name, values in summed.items()}
    hours = _column(stream, "seals", "hour")
    latest_hour = pc.max(hours).as_py() if len(hours) else None
    return LakeFigures(
        persisted=_rows_per_partition(stream, "events"),
        late=_rows_per_partition(stream, "late"),
        quarantined=_rows_per_partition(stream, "quarantine"),
        positions={p: row.position for p, row in standing.partitions.items()},
        statuses={p: row.status for p, row in standing.partitions.items()},
        read=sums["read"],
        without_data=sums.get("without_data", {}),
        sealed_hours=len(hours),
        latest_sealed_hour_ms=None if latest_hour is None else int(latest_hour.timestamp() * 1000),
    )


def read_report_rows(
    stream: StreamConfig, lake: LakeFigures, log=None, timeout_s: float = 10.0
) -> list[PartitionReport] | list[ShardReport]:
    """The report's rows: per Kafka partition (dense offsets) its bounds now against ``lake``;
    per Kinesis shard its state and MillisBehindLatest at the lake's position.

    ``log``: an opened log to ask (a test's stand-in; the caller closes it): for Kafka anything
    with the PartitionedLog's ``bounds_now``, for Kinesis a connectors.kinesis_log.KinesisLog.
    Default: the stream's own, opened and closed here, each question at most ``timeout_s``.
    Raises LogUnreachableError naming the log when it does not answer, or lacks the topic or stream.
    """
    if stream.source.position_type.dense:
        with _asking(stream, log, timeout_s) as asked_log:
            bounds = asked_log.bounds_now({}, (), check_retention=False)
        return partition_reports(lake, bounds)
    with _asking(stream, log, timeout_s) as asked_log:
        listed = asked_log.shards()
        asked = lake.shards_to_ask(listed)
        asked_log.fill(asked, None, _PROBE_RECORDS)
        probed = asked_log.bounds()
    return shard_reports(lake, listed, {p: probed[p].millis_behind_latest for p in asked if p in probed})


@contextmanager
def _asking(stream: StreamConfig, log, timeout_s: float):
    """``log``, or the stream's own opened here and closed after; what the log raises when it
    does not answer becomes one LogUnreachableError naming it."""
    opened = None
    try:
        if log is None:
            log = opened = _open_log(stream, timeout_s)
        yield log
    except (LogUnreachableError, KinesisUnavailableError, ConnectionError, TimeoutError, ValueError) as error:
        raise LogUnreachableError(
            f"the persistence report asks the {stream.source.description} where it stands, and it did not answer "
            f"({one_line(error)}). Is it up? `tidemark up` starts the embedded stack."
        ) from None
    finally:
        if opened is not None:
            opened.close()


def _open_log(stream: StreamConfig, timeout_s: float):
    """The stream's log; for Kafka only once a broker accepts a connection (a client retries a
    refused broker for its whole timeout)."""
    from connectors.partitioned_logs import open_log
    from connectors.reachable import reachable

    connection = stream.source.connection()
    if stream.source.position_type.dense:
        reachable(connection.bootstrap_servers)
    return open_log(connection, timeout_s=timeout_s)


def _table(stream: StreamConfig, name: str):
    """The Delta table ``name`` of ``stream``, or None when there is none at its path."""
    from deltalake.exceptions import TableNotFoundError

    from connectors.lake_storage import open_delta_table

    try:
        return open_delta_table(stream.table_path(name))
    except TableNotFoundError:
        return None


def _column(stream: StreamConfig, name: str, column: str):
    """One column of every row of table ``name`` (empty when the table does not exist)."""
    import pyarrow as pa

    from connectors.delta_scan import read_rows

    table = _table(stream, name)
    if table is None:
        return pa.chunked_array([], pa.null())
    return read_rows(table, stream.table_path(name), [column])[column]


def _rows_per_partition(stream: StreamConfig, name: str) -> dict[int, int]:
    """Rows of table ``name`` per source_partition."""
    import pyarrow.compute as pc

    counted = pc.value_counts(_column(stream, name, "source_partition"))
    return dict(zip(counted.field("values").to_pylist(), counted.field("counts").to_pylist()))


def _summed(partitions, values) -> dict[int, int]:
    """``values`` summed per partition (rows whose value is null add nothing)."""
    import pyarrow as pa

    summed = pa.table({"p": partitions, "v": values}).group_by("p").aggregate([("v", "sum")])
    return {p: v or 0 for p, v in zip(summed["p"].to_pylist(), summed["v_sum"].to_pylist())}
