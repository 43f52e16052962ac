"""Progress of a replayable stateful job over sealed-event slices, as log lines for people."""

from __future__ import annotations

import json
import logging
import time

from pyspark.sql.streaming import StreamingQueryListener

from tidemark.event_time_text import format_optional_event_time

log = logging.getLogger("tidemark.offline_devices")


class SliceProgress(StreamingQueryListener):
    """Logs one line per micro-batch of the query named ``query_name`` (the slice read, its
    records, the watermark) and totals them. Spark reports progress asynchronously, so
    ``wait_for`` waits (a little) for the report of the query's last batch before totals are read.
    """

    def __init__(self, stream: str, mode: str, query_name: str):
        self._stream = stream
        self._mode = mode
        self._query_name = query_name
        self.batches = 0
        self.slices = 0
        self.records = 0
        self.read_until_ms: int | None = None
        self.horizon_ms: int | None = None
        self._last_batch_id = -1
        self._query_ids: set[str] = set()

    def onQueryStarted(self, event) -> None:
        if event.name == self._query_name:
            self._query_ids.add(str(event.id))

    def onQueryProgress(self, event) -> None:
        progress = event.progress
        if str(progress.id) not in self._query_ids:
            return
        source = progress.sources[0]
        start, end = _offset(source.startOffset), _offset(source.endOffset)
        self.batches += 1
        self._last_batch_id = max(self._last_batch_id, progress.batchId)
        line = {"event": "slice_processed", "stream": self._stream, "mode": self._mode, "batch_id": progress.batchId}
        if end and end.get("until_ms") is not None and end != start and progress.numInputRows > 0:
            # Every slice yields one slice-end marker row; the rest are records.
            records = max(progress.numInputRows - 1, 0)
            self.slices += 1
            self.records += records
            self.read_until_ms = end["until_ms"]
            self.horizon_ms = end.get("horizon_ms")
            line.update(
                slice_from=format_optional_event_time(end.get("from_ms")),
                slice_until=format_optional_event_time(end["until_ms"]),
                records=records,
                horizon=format_optional_event_time(end.get("horizon_ms")),
            )
        else:
            # A batch without a slice: Spark runs one to fire the timers the last slice's
            # watermark unlocked (the last of a run, or when no new hour was sealed yet).
            line.update(event="timers_fired", records=0)
        line["watermark"] = (progress.eventTime or {}).get("watermark")
        line["duration_ms"] = (progress.durationMs or {}).get("triggerExecution")
        log.info(line)

    def onQueryIdle(self, event) -> None:
        """An idle trigger read no slice: nothing for a person to read (the job logs its end)."""

    def onQueryTerminated(self, event) -> None:
        """The job logs the run's end and summary itself, after awaitTermination."""

    def wait_for(self, query, timeout_s: float = 10.0) -> None:
        # Only batches that ran count: a trigger that found nothing to read reports progress too
        # (to onQueryIdle, with the next batch's id), never to onQueryProgress.
        ran = [p.batchId for p in query.recentProgress if "addBatch" in (p.durationMs or {})]
        deadline = time.monotonic() + timeout_s
        while ran and self._last_batch_id < max(ran) and time.monotonic() < deadline:
            time.sleep(0.05)


def _offset(text) -> dict | None:
    """A source offset as the progress report gives it (JSON text; not JSON for "none yet")."""
    if not isinstance(text, str):
        return None
    try:
        offset = json.loads(text)
    except ValueError:
        return None
    return offset if isinstance(offset, dict) else None
