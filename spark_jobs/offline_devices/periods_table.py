"""The offline-device detector's output table: (device_id, offline_at, online_at), keyed
(device_id, offline_at), written by MERGE from each micro-batch of the detector."""

from __future__ import annotations

import logging

log = logging.getLogger("tidemark.offline_devices")

_MERGE_MATERIALIZE_SOURCE = "spark.databricks.delta.merge.materializeSource"


class OfflinePeriodsWriter:
    """The ``foreachBatch`` function: MERGE the batch's periods into the output table.

    Key (device_id, offline_at). A period that began is inserted with online_at null; when it
    ends, online_at is set once (only while it is null), so a replayed batch, or rows of a
    period that began and ended in one batch, change nothing further. The batch is collected
    once: it holds periods (a few per device at most), and running the stateful plan twice in one
    batch would handle the same timers twice.
    """

    def __init__(self, spark, output: str):
        self._spark = spark
        self._output = output
        self.opened = 0
        self.closed = 0

    def ensure_table(self) -> None:
        """Create the output table unless it is there; safe beside another run creating it at the
        same moment (two backfills of one window, a backfill into live's table)."""
        from spark_jobs.lake.table_creation import create_delta_table
        from tidemark.offline_detection import OFFLINE_PERIODS_COLUMNS

        create_delta_table(self._spark, self._output, list(OFFLINE_PERIODS_COLUMNS))

    def __call__(self, batch, batch_id: int) -> None:
        from delta.tables import DeltaTable

        rows = batch.collect()
        if not rows:
            return
        latest: dict[tuple[str, int], int | None] = {}
        for row in rows:
            key = (row.device_id, row.offline_at_ms)
            latest[key] = row.online_at_ms if row.online_at_ms is not None else latest.get(key)
        source = self._spark.createDataFrame(
            [(device, start, end) for (device, start), end in sorted(latest.items())],
            "device_id STRING, offline_at_ms BIGINT, online_at_ms BIGINT",
        ).selectExpr(
            "device_id", "timestamp_millis(offline_at_ms) AS offline_at", "timestamp_millis(online_at_ms) AS online_at"
        )
        # The source is rows already collected, so Delta need not materialize it again (its
        # local checkpoint also logs a warning per batch).
        previous = self._spark.conf.get(_MERGE_MATERIALIZE_SOURCE, None)
        self._spark.conf.set(_MERGE_MATERIALIZE_SOURCE, "none")
        try:
            metrics = (
                DeltaTable.forPath(self._spark, self._output)
                .alias("t")
                .merge(source.alias("s"), "t.device_id = s.device_id AND t.offline_at = s.offline_at")
                .whenMatchedUpdate(
                    condition="t.online_at IS NULL AND s.online_at IS NOT NULL", set={"online_at": "s.online_at"}
                )
                .whenNotMatchedInsertAll()
                .execute()
            ).first()
        finally:
            if previous is None:
                self._spark.conf.unset(_MERGE_MATERIALIZE_SOURCE)
            else:
                self._spark.conf.set(_MERGE_MATERIALIZE_SOURCE, previous)
        # Opened: periods new to the table (whether already ended or not); closed: periods whose
        # end this batch wrote. A replayed batch inserts nothing.
        opened = int(metrics["num_inserted_rows"]) if metrics is not None else 0
        closed = sum(1 for end in latest.values() if end is not None)
        self.opened += opened
        self.closed += closed
        still_offline = sum(1 for end in latest.values() if end is None)
        log.info(
            {
                "event": "periods_written",
                "batch_id": batch_id,
                "opened": opened,
                "closed": closed,
                "still_offline": still_offline,
                "output": self._output,
            }
        )
