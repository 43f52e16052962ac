"""One micro-batch of the persist job: decode, route, and commit to events, quarantine and ledger.

Order of the commits: events, quarantine, then the ledger. Each append is idempotent per
(query id, batch id), so a crash between two of them is repaired by Spark replaying the batch: the
tables already written skip it, the others write it. The ledger row is the last word: when it is
there, the batch is fully persisted.
"""

from __future__ import annotations

import json
import logging
import threading
import time

from spark_jobs.decode_stage import decode_function, decoded_schema
from spark_jobs.kafka_source import RANGE_ROW, RECORD_ROW
from spark_jobs.lake_tables import LakeTables
from tidemark.stream_config import StreamConfig

log = logging.getLogger("tidemark.persist")


class QueryIdentity:
    """The streaming query's id, stable across restarts from the same checkpoint.

    Known only once the query has started, while the first batch may already be running: the
    batch function waits for it (bounded), the job sets it right after ``start()``.
    """

    def __init__(self):
        self._query_id: str | None = None
        self._known = threading.Event()

    def set(self, query_id: str) -> None:
        self._query_id = query_id
        self._known.set()

    def get(self, timeout_s: float = 120.0) -> str:
        if not self._known.wait(timeout_s):
            raise RuntimeError("the streaming query id was never set; the job must call QueryIdentity.set")
        return self._query_id


class PersistBatch:
    """The ``foreachBatch`` function of the persist job (mode: live, backfill or recovery)."""

    def __init__(self, stream: StreamConfig, tables: LakeTables, identity: QueryIdentity, mode: str = "live"):
        self._stream = stream
        self._tables = tables
        self._identity = identity
        self._mode = mode
        self._decode = decode_function(stream)
        self._decoded_schema = decoded_schema(stream)

    def __call__(self, raw, batch_id: int) -> None:
        from pyspark import StorageLevel

        app_id = f"tidemark:{self._stream.name}:{self._mode}:{self._identity.get()}"
        # Decoded once and kept: events, quarantine and the ledger all derive from it, and reading
        # the log again per output would triple the Kafka reads.
        started = time.monotonic()
        decoded = raw.mapInArrow(self._decode, self._decoded_schema).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            ledger = self._ledger(decoded, batch_id).cache()
            totals = ledger.groupBy().sum("records", "quarantined").first()
            self._tables.append_once(_events(decoded, self._stream, batch_id), "events", app_id, batch_id)
            # Decoding is deterministic, so a replay of this batch finds the same (empty) set:
            # skipping the commit loses nothing and saves an idempotent commit per batch.
            if totals[1]:
                self._tables.append_once(_quarantine(decoded, batch_id), "quarantine", app_id, batch_id)
            self._tables.append_once(ledger, "ledger", app_id, batch_id)
            ledger.unpersist()
        finally:
            decoded.unpersist()
        log.info(
            json.dumps(
                {
                    "event": "batch_persisted",
                    "stream": self._stream.name,
                    "mode": self._mode,
                    "batch_id": batch_id,
                    "records": totals[0] or 0,
                    "quarantined": totals[1] or 0,
                    "seconds": round(time.monotonic() - started, 2),
                }
            )
        )

    def _ledger(self, decoded, batch_id: int):
        from pyspark.sql import functions as F

        records = decoded.where(F.col("row_kind") == RECORD_ROW)
        valid = F.col("reject_reason").isNull()
        per_partition = records.groupBy("source_partition").agg(
            F.sum(F.when(valid, 1).otherwise(0)).alias("records"),
            F.sum(F.when(valid, 0).otherwise(1)).alias("quarantined"),
            F.min(F.when(valid, F.col("event_time_ms"))).alias("min_event_time_ms"),
            F.max(F.when(valid, F.col("event_time_ms"))).alias("max_event_time_ms"),
        )
        ranges = decoded.where(F.col("row_kind") == RANGE_ROW)
        return ranges.join(per_partition, "source_partition", "left").select(
            F.lit(self._stream.name).alias("stream"),
            F.lit(batch_id).cast("bigint").alias("batch_id"),
            F.col("source_partition"),
            F.lit(self._mode).alias("mode"),
            F.col("source_offset").alias("start_offset"),
            F.col("range_end").alias("end_offset"),
            F.col("log_end_offset"),
            F.coalesce(F.col("records"), F.lit(0)).cast("bigint").alias("records"),
            F.coalesce(F.col("quarantined"), F.lit(0)).cast("bigint").alias("quarantined"),
            F.lit(0).cast("bigint").alias("late"),
            F.timestamp_millis(F.col("min_event_time_ms")).alias("min_event_time"),
            F.timestamp_millis(F.col("max_event_time_ms")).alias("max_event_time"),
            F.lit(None).cast("timestamp").alias("partition_watermark"),
            F.lit(None).cast("string").alias("partition_status"),
            F.lit("record_count").alias("slicing"),
            F.timestamp_millis(F.col("read_time_ms")).alias("read_time"),
        )


def _events(decoded, stream: StreamConfig, batch_id: int):
    from pyspark.sql import functions as F

    event_time = F.timestamp_millis(F.col("event_time_ms"))
    return decoded.where((F.col("row_kind") == RECORD_ROW) & F.col("reject_reason").isNull()).select(
        F.col("source_partition"),
        F.col("source_offset"),
        F.timestamp_millis(F.col("log_timestamp_ms")).alias("log_timestamp"),
        event_time.alias("event_time"),
        F.col("record_key"),
        *[F.col(field.name) for field in stream.payload.fields],
        F.lit(batch_id).cast("bigint").alias("batch_id"),
        F.to_date(event_time).alias("event_date"),
        F.hour(event_time).alias("event_hour"),
    )


def _quarantine(decoded, batch_id: int):
    from pyspark.sql import functions as F

    return decoded.where((F.col("row_kind") == RECORD_ROW) & F.col("reject_reason").isNotNull()).select(
        F.col("source_partition"),
        F.col("source_offset"),
        F.timestamp_millis(F.col("log_timestamp_ms")).alias("log_timestamp"),
        F.col("record_key"),
        F.col("value").alias("raw_value"),
        F.col("reject_reason").alias("reason"),
        F.col("reject_detail").alias("detail"),
        F.lit(batch_id).cast("bigint").alias("batch_id"),
        F.timestamp_millis(F.col("read_time_ms")).alias("read_time"),
    )
