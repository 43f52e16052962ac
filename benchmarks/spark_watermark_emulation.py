"""Spark's global watermark, replayed record by record, to explain (and check) what run (c) dropped.

The real figure of run (c) is produced − counted by Spark itself; this replay only says why. Given
the offset ranges Spark read in each batch (from the query's progress) and the topic's records, it
applies Spark's rules for one watermark operator feeding a windowed aggregation in append mode:

- the watermark a batch runs with (the one its progress reports, used to evict and emit windows)
  is max(previous watermark, max event time of all earlier batches − delay); the first batch
  runs with the epoch (0);
- since Spark 3.4 (SPARK-40925, multiple stateful operators) late input rows are filtered with
  the watermark of the PREVIOUS batch, not the batch's own: a row is dropped when its window end
  <= the previous batch's watermark, i.e. exactly when its window was already emitted. So rows of
  batch N are judged by max event time of batches <= N − 2, minus the delay. (Windows are
  epoch-aligned, [start, start + length).)

All times are ms since the epoch, UTC.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime


@dataclass
class EmulatedBatch:
    batch_id: int
    watermark_ms: int  # evicts windows in this batch; what the progress reports
    late_cutoff_ms: int  # rows whose window ends at or before this are dropped in this batch
    dropped: dict[int, int] = field(default_factory=dict)


def read_event_times(bootstrap: str, topic: str, partitions: list[int]) -> dict[int, list[int]]:
    """Every record's payload event time (ms), per partition, indexed by offset (the topic is fresh:
    offsets start at 0). Parsed from the JSON value, as Spark's from_json does, not from the log time."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-emulation",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in partitions}
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        times: dict[int, list[int]] = {p: [] for p in partitions}
        remaining = {p for p in partitions if ends[p] > 0}
        while remaining:
            for message in consumer.consume(num_messages=10_000, timeout=5):
                if message.error():
                    continue  # partition EOF markers
                p = message.partition()
                if message.offset() != len(times[p]):
                    raise RuntimeError(f"partition {p}: expected offset {len(times[p])}, got {message.offset()}")
                text = json.loads(message.value())["event_time"]
                times[p].append(round(datetime.fromisoformat(text).timestamp() * 1000))
                if len(times[p]) >= ends[p]:
                    remaining.discard(p)
        return times
    finally:
        consumer.close()


def replay(
    batches: list[dict], event_times: dict[int, list[int]], delay_ms: int, window_ms: int
) -> list[EmulatedBatch]:
    """Batches as reported by spark_kafka_watermark.py (batch_id, offsets {"p": [start, end)})."""
    watermark_ms = 0
    previous_watermark_ms = 0
    max_seen_ms: int | None = None
    replayed = []
    for batch in sorted(batches, key=lambda b: b["batch_id"]):
        result = EmulatedBatch(batch["batch_id"], watermark_ms, previous_watermark_ms)
        batch_max_ms = None
        for p_text, (start, end) in batch["offsets"].items():
            p = int(p_text)
            rows = event_times[p][start:end]
            result.dropped[p] = sum(1 for t in rows if t - t % window_ms + window_ms <= previous_watermark_ms)
            if rows:
                batch_max_ms = max(rows) if batch_max_ms is None else max(batch_max_ms, max(rows))
        if batch_max_ms is not None:
            max_seen_ms = batch_max_ms if max_seen_ms is None else max(max_seen_ms, batch_max_ms)
        previous_watermark_ms = watermark_ms
        if max_seen_ms is not None:
            # Updated at the end of the batch, used from the next one on.
            watermark_ms = max(watermark_ms, max_seen_ms - delay_ms)
        replayed.append(result)
    return replayed
