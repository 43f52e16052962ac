"""The erasure job: removes the records a predicate names from events, late and quarantine, and
records each in the stream's erasures table so that no job writes it again.

    python spark_jobs/erasure/job.py --request '<ErasureRequest JSON>' [--conf streams.yaml]
        [--result result.json]

Run by the erasure DAG (tidemark_airflow.erase_operator) or ``tidemark erase``. Steps:

1. **Find** the records: the rows of events and late the predicate holds for
   (tidemark.erasure_predicate), and their quarantine rows (a re-driven record keeps one as its
   history). A quarantined record never decoded, so its columns are unknown: for a JSON stream
   its raw value is read for the predicate's fields (each field's path, as the decoder reads it);
   an Avro or Protobuf record only quarantine holds is found through its position only.
2. **Record** them, one row each, in the erasures table (made by the first erasure), with the
   predicate, who asked, why and when: from that commit on, live, recovery, backfill (also into
   a shadow set, so the daily reconciliation) and re-drive leave these positions out
   (spark_jobs.persist.batch), and the quality checks count them as erased, not missing.
3. **Delete** them from events, late and quarantine by position (a Delta MERGE ... DELETE per
   table, its user metadata ``erasure:<id>``: the damage scan labels it an erasure). The counts
   come from these commits' metrics.
4. **Settle with live**: a live batch that decided before step 2 may commit a record of the
   person after step 3. The job waits for live's batch in flight (tidemark.live_batch_wait: while
   the driver beats) and then finds and deletes once more.

Records live has not read yet are not erased: the result names the partitions whose live position
was behind the log's end (run the erasure again once live has caught up).

Exit status: 0 done; 2 bad input (the request, the predicate, the configuration); 1 a failure.
"""

from __future__ import annotations

import logging
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

# spark-submit runs this file as a script: the project's root goes first on the path.
sys.path[0] = str(Path(__file__).resolve().parents[2])

from spark_jobs.json_log import configure_json_logging  # noqa: E402
from spark_jobs.request_job import request_arguments, requested_stream  # noqa: E402
from tidemark.erasure_predicate import ErasurePredicate  # noqa: E402
from tidemark.erasure_request import ErasureRequest, ErasureRequestError  # noqa: E402
from tidemark.erasure_result import ErasureResult  # noqa: E402
from tidemark.event_time_text import format_event_time  # noqa: E402
from tidemark.stream_config import StreamConfig, StreamConfigError, load_streams  # noqa: E402

log = logging.getLogger("tidemark.erasure")

KEY = ["source_partition", "source_offset"]
TABLES = ("events", "late", "quarantine")
HOUR_MS = 3_600_000


def main(argv: list[str] | None = None) -> int:
    configure_json_logging()
    args = request_arguments(
        "erase", "Erase the records a predicate names.", "an ErasureRequest's JSON (tidemark.erasure_request)"
    ).parse_args(argv)
    try:
        request = ErasureRequest.decode(args.request)
        stream = requested_stream(load_streams(args.conf), request)
        predicate = request.predicate(stream)
    except (StreamConfigError, ErasureRequestError, ValueError) as error:
        print(f"erase: {error}", file=sys.stderr)
        return 2
    result = run_erasure(stream, request, predicate)
    if args.result:
        args.result.write_bytes(result.encode())
    print(result.summary())
    return 0


def run_erasure(
    stream: StreamConfig, request: ErasureRequest, predicate: ErasurePredicate, spark=None
) -> ErasureResult:
    """Erase ``request``'s records of ``stream``; what was erased, counted from this run's commits.
    ``spark``: a session to use (default: the lake's, made here)."""
    from connectors.lake_storage_check import check_lake_storage
    from connectors.spark_session import lake_spark_session
    from spark_jobs.lake.erasures_table import ErasuresTable
    from spark_jobs.lake.tables import LakeTables

    check_lake_storage(stream)
    spark = spark or lake_spark_session(f"tidemark-erase-{stream.name}")
    tables = LakeTables(spark, stream)
    tables.ensure()
    erasures = ErasuresTable(spark, tables)
    erasures.ensure()
    erasure_id, requested_at = uuid.uuid4().hex, datetime.now(UTC)
    behind = _not_yet_persisted(stream)
    records, hours = 0, set()
    deleted = dict.fromkeys(TABLES, 0)
    live_batch = _pending_live_batch(spark, stream)
    for attempt in ("first", "after live's batch in flight"):
        found = _find(spark, tables, stream, predicate)
        new = found.join(erasures.read_keys(), KEY, "left_anti").collect()
        if new:
            erasures.record(_erasure_rows(spark, stream, request, erasure_id, requested_at, new), erasure_id)
            records += len(new)
            hours.update(
                row.event_time_ms - row.event_time_ms % HOUR_MS for row in new if row.event_time_ms is not None
            )
        keys = found.select(*KEY).distinct().cache()
        for table in TABLES:
            deleted[table] += _delete(spark, tables, table, keys, erasure_id)
        keys.unpersist()
        log.info(
            {
                "event": "records_erased",
                "stream": stream.name,
                "erasure_id": erasure_id,
                "pass": attempt,
                "recorded": len(new),
                "deleted": dict(deleted),
            }
        )
        if live_batch is None or not _wait_for_live_batch(spark, stream, live_batch):
            break
        live_batch = None
    return ErasureResult(
        stream=stream.name,
        erasure_id=erasure_id,
        where=predicate.text,
        requested_by=request.requested_by,
        requested_at=format_event_time(int(requested_at.timestamp() * 1000)),
        records=records,
        deleted=deleted,
        event_hours=tuple(format_event_time(h) for h in sorted(hours)),
        not_yet_persisted=behind,
        finished_at=format_event_time(int(time.time() * 1000)),
    )


def _find(spark, tables, stream: StreamConfig, predicate: ErasurePredicate):
    """(source_partition, source_offset, log_timestamp_ms, event_time_ms, found_in) of every record
    the predicate names, one row each."""
    from functools import reduce

    from pyspark.sql import functions as F

    condition = reduce(lambda a, b: a & b, [F.col(c.column).isin(list(c.values)) for c in predicate.clauses])
    decoded = [
        tables.read(table).where(condition).select(*KEY, "log_timestamp", "event_time", F.lit(table).alias("table"))
        for table in ("events", "late")
    ]
    matched = decoded[0].unionByName(decoded[1])
    quarantine = tables.read("quarantine").select(*KEY, "log_timestamp", "raw_value")
    held = quarantine.join(matched.select(*KEY).distinct(), KEY, "left_semi")
    if stream.payload.format == "json":
        held = held.unionByName(quarantine.where(_raw_json_condition(stream, predicate)))
    quarantined = held.select(
        *KEY, "log_timestamp", F.lit(None).cast("timestamp").alias("event_time"), F.lit("quarantine").alias("table")
    )
    return (
        matched.unionByName(quarantined)
        .groupBy(*KEY)
        .agg(
            F.unix_millis(F.min("log_timestamp")).alias("log_timestamp_ms"),
            F.unix_millis(F.max("event_time")).alias("event_time_ms"),
            F.concat_ws(",", F.array_sort(F.collect_set("table"))).alias("found_in"),
        )
    )


def _raw_json_condition(stream: StreamConfig, predicate: ErasurePredicate):
    """The predicate over a quarantined record's raw JSON value: each field read at its path (as
    the decoder reads it), compared as the JSON text of the literal."""
    from functools import reduce

    from pyspark.sql import functions as F

    fields = {f.name: f for f in stream.payload.fields}
    raw = F.col("raw_value").cast("string")

    def clause(c):
        if c.column not in fields:  # a key field: not in the value
            return F.lit(False)
        path = "$." + (fields[c.column].path or c.column)
        texts = [("true" if v else "false") if isinstance(v, bool) else str(v) for v in c.values]
        return F.get_json_object(raw, path).isin(texts)

    return reduce(lambda a, b: a & b, [clause(c) for c in predicate.clauses])


def _erasure_rows(spark, stream, request: ErasureRequest, erasure_id: str, requested_at: datetime, rows):
    from tidemark.table_schemas import ddl, erasures_columns

    def instant(ms):
        return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC)

    values = [
        (
            stream.name,
            erasure_id,
            request.where,
            request.requested_by,
            request.reason,
            requested_at,
            row.source_partition,
            row.source_offset,
            instant(row.log_timestamp_ms),
            instant(row.event_time_ms),
            row.found_in,
        )
        for row in rows
    ]
    return spark.createDataFrame(values, ddl(erasures_columns(stream.source.position_type))).coalesce(1)


def _delete(spark, tables, table: str, keys, erasure_id: str) -> int:
    """Delete ``keys``' rows from ``table`` in one commit whose user metadata is
    ``erasure:<id>``; the rows its metrics say it deleted. No row to delete: no commit."""
    from delta.tables import DeltaTable

    present = tables.read(table).join(keys, KEY, "left_semi").select(*KEY)
    if present.limit(1).count() == 0:
        return 0
    spark.conf.set("spark.databricks.delta.commitInfo.userMetadata", f"erasure:{erasure_id}")
    try:
        metrics = (
            DeltaTable.forPath(spark, tables.path(table))
            .alias("t")
            .merge(keys.alias("s"), "t.source_partition = s.source_partition AND t.source_offset = s.source_offset")
            .whenMatchedDelete()
            .execute()
            .first()
        )
    finally:
        spark.conf.unset("spark.databricks.delta.commitInfo.userMetadata")
    return int(metrics["num_deleted_rows"]) if metrics is not None else 0


def _pending_live_batch(spark, stream: StreamConfig) -> int | None:
    """Live's batch planned and not committed now, if any (it may have decided before the erasure)."""
    from spark_jobs.streaming_checkpoint import pending_batch

    return pending_batch(spark, stream.checkpoint_path("persist"))


def _wait_for_live_batch(spark, stream: StreamConfig, batch: int) -> bool:
    """Wait for live's batch ``batch`` to commit (while the driver beats) or to be known dead;
    True when it committed (what it wrote must be looked at again)."""
    from spark_jobs.persist.driver_beat import read_driver_beat
    from spark_jobs.streaming_checkpoint import pending_batch
    from tidemark.live_batch_wait import LiveBatchWait, Verdict

    checkpoint = stream.checkpoint_path("persist")
    wait = LiveBatchWait(batch, int(time.monotonic() * 1000))
    while True:
        decision = wait.decide(
            int(time.monotonic() * 1000), pending_batch(spark, checkpoint), read_driver_beat(spark, checkpoint)
        )
        if decision.verdict is not Verdict.WAIT:
            log.info({"event": "live_batch_settled", "stream": stream.name, "detail": decision.reason})
            return decision.verdict is Verdict.PROCEED
        time.sleep(0.5)


def _not_yet_persisted(stream: StreamConfig) -> dict[str, tuple[str, str]]:
    """{partition: (live's position, the log's end)} where live has not read the log to its end."""
    from connectors.lake_reader import LedgerMissingError, read_stream_overview

    try:
        overview = read_stream_overview(stream)
    except LedgerMissingError:
        return {}
    return {
        str(p.partition): (str(p.position), str(p.log_end))
        for p in overview.partitions
        if p.position is not None and p.log_end is not None and p.position < p.log_end
    }


if __name__ == "__main__":
    sys.exit(main())
