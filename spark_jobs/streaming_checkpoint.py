"""What a streaming query's checkpoint says before a batch is written.

Spark writes a micro-batch's end offsets to ``<checkpoint>/offsets/<batch id>`` before it runs
the batch (its write-ahead log), and ``<checkpoint>/commits/<batch id>`` once the batch
function has returned. Two things follow that the persist job relies on:

- a batch's planned ranges are known without reading a single record: the batch starts where
  the one before ended, so its start is the previous entry and its end its own (Spark keeps
  the last 100 entries; only a checkpoint's first batch has no start to read);
- the only batch a run can replay is the one the checkpoint shows planned but not committed
  when the run starts: Spark runs it first, and every later batch of the run is new (a batch
  function that fails stops the query, Spark never calls it twice for one batch in one run).

An offset log file: a version line ("v1"), a line of batch metadata, then one line per source
with the offset that source returned (tidemark.source_state.SourceState.to_offset: the persist
query has one source).
"""

from __future__ import annotations

import json

from tidemark.planned_range import PlannedRange
from tidemark.source_state import SourceState


def checkpoint_has_offsets(spark, checkpoint: str) -> bool:
    """True when the checkpoint at ``checkpoint`` has planned at least one batch."""
    return bool(_batch_ids(spark, checkpoint, "offsets"))


def pending_batch(spark, checkpoint: str) -> int | None:
    """The batch id the checkpoint shows planned and not committed, which the next run of its
    query replays first (its batch function may have written some of it); None when every
    planned batch is committed. Call before the query starts."""
    planned = _batch_ids(spark, checkpoint, "offsets")
    if not planned:
        return None
    committed = _batch_ids(spark, checkpoint, "commits")
    last = max(planned)
    return last if not committed or max(committed) < last else None


def planned_ranges(spark, checkpoint: str, batch_id: int) -> list[PlannedRange] | None:
    """The ranges Spark's batch ``batch_id`` of the query checkpointed at ``checkpoint`` reads,
    by partition; None when the checkpoint cannot say (its first batch, or an entry missing)."""
    if batch_id < 1:
        return None
    start, end = (read_text(spark, f"{checkpoint.rstrip('/')}/offsets/{batch}") for batch in (batch_id - 1, batch_id))
    before, after = (source_offset(text) if text is not None else None for text in (start, end))
    if before is None or after is None:
        return None
    return PlannedRange.of_batch(SourceState.from_offset(before), SourceState.from_offset(after))


def source_offset(text: str) -> dict | None:
    """The offset of the query's one source in an offset log file's ``text``; None when the file
    is not one (another version, no source line, several sources)."""
    lines = text.splitlines()
    if len(lines) != 3 or lines[0] != "v1":
        return None
    try:
        offset = json.loads(lines[2])
    except ValueError:
        return None
    return offset if isinstance(offset, dict) and "partitions" in offset else None


def hadoop_file_system(spark, path: str):
    """The Hadoop path and file system of ``path`` (local, s3a: whatever it is on)."""
    hadoop_path = spark.sparkContext._jvm.org.apache.hadoop.fs.Path(path)
    return hadoop_path, hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())


def _batch_ids(spark, checkpoint: str, log: str) -> list[int]:
    """The batch ids of the checkpoint's ``log`` ("offsets" or "commits"): its files named by a
    number (Spark also keeps hidden checksum and temporary files there)."""
    folder, fs = hadoop_file_system(spark, f"{checkpoint.rstrip('/')}/{log}")
    if not fs.exists(folder):
        return []
    names = (status.getPath().getName() for status in fs.listStatus(folder))
    return [int(name) for name in names if name.isdigit()]


def read_text(spark, path: str) -> str | None:
    """The text of the file at ``path``, None if absent."""
    hadoop_path, fs = hadoop_file_system(spark, path)
    if not fs.exists(hadoop_path):
        return None
    stream = fs.open(hadoop_path)
    try:
        return spark.sparkContext._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
    finally:
        stream.close()


def in_flight_ranges(spark, checkpoint: str) -> tuple[int | None, dict[int, tuple[int, int]]]:
    """The batch the query checkpointed at ``checkpoint`` is writing now (planned, not committed)
    and its ranges, {partition: (start, end)}; (None, {}) when there is none (or no checkpoint).
    A checkpoint's first batch has no start on record: its ranges count from offset 0."""
    batch = pending_batch(spark, checkpoint)
    if batch is None:
        return None, {}
    planned = planned_ranges(spark, checkpoint, batch)
    if planned is not None:
        return batch, {r.partition: (r.start_offset, r.end_offset) for r in planned if r.end_offset > r.start_offset}
    text = read_text(spark, f"{checkpoint.rstrip('/')}/offsets/{batch}")
    offset = source_offset(text) if text is not None else None
    if offset is None:
        return batch, {}
    return batch, {p: (0, end) for p, end in SourceState.from_offset(offset).positions().items() if end > 0}
