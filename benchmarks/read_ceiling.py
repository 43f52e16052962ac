"""Run (c) of the catch-up benchmark, the read ceiling: the whole topic read by confluent-kafka alone
into Arrow arrays, in one process. No Spark, no decoding, no writing: what reading costs here.

    .venv/bin/python benchmarks/read_ceiling.py --bootstrap 127.0.0.1:9092 --topic T --report report.json

Every partition is assigned from its beginning and read to its readable end (read_committed:
the last stable offset, as tidemark reads), with the consumer settings of tidemark's own reader
(connectors/kafka_log.py) so the ceiling is the same client in the same configuration. Records
become four Arrow arrays a chunk at a time: offset (int64), timestamp (int64, ms since the epoch,
UTC), key (binary), value (binary).

Writes one JSON report: records, value_bytes, read_seconds (from creating the consumer to the
last array built: the timed part), records_per_second over read_seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--report", required=True, help="JSON report to write")
    args = parser.parse_args()
    import pyarrow.compute as pc

    started = time.monotonic()
    columns = read_topic(args.bootstrap, args.topic)
    read_s = time.monotonic() - started
    records = sum(len(chunk) for chunk in columns["offset"])
    value_bytes = sum(pc.sum(pc.binary_length(chunk)).as_py() or 0 for chunk in columns["value"])
    report = {
        "records": records,
        "value_bytes": value_bytes,
        "read_seconds": round(read_s, 2),
        "records_per_second": round(records / read_s) if read_s > 0 else None,
    }
    Path(args.report).write_text(json.dumps(report, indent=1) + "\n")
    return 0


def read_topic(bootstrap: str, topic: str, chunk: int = 10_000, timeout_s: float = 60.0) -> dict[str, list]:
    """Every data record of ``topic`` as Arrow array chunks: {"offset": [...], "timestamp": [...],
    "key": [...], "value": [...]}. TimeoutError when the broker delivers nothing for ``timeout_s``
    while a partition is unfinished."""
    import pyarrow as pa
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-read-ceiling",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
            # As connectors/kafka_log.py's reader: large fetches, a deep local queue.
            "fetch.max.bytes": 52_428_800,
            "queued.max.messages.kbytes": 65_536,
        }
    )
    try:
        partitions = sorted(consumer.list_topics(topic, timeout=30).topics[topic].partitions)
        if not partitions:
            raise RuntimeError(f"topic {topic!r} does not exist at {bootstrap}")
        # Empty partitions send no EOF before their first record; only wait for those with data.
        unfinished = {
            p for p in partitions if consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] > 0
        }
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        columns: dict[str, list] = {"offset": [], "timestamp": [], "key": [], "value": []}
        waited_since = time.monotonic()
        while unfinished:
            messages = consumer.consume(num_messages=chunk, timeout=1.0)
            if not messages:
                if time.monotonic() - waited_since > timeout_s:
                    raise TimeoutError(
                        f"nothing received for {timeout_s:.0f} s; partitions {sorted(unfinished)} unfinished"
                    )
                continue
            waited_since = time.monotonic()
            offsets, timestamps, keys, values = [], [], [], []
            for message in messages:
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        unfinished.discard(message.partition())
                        continue
                    raise KafkaException(error)
                offsets.append(message.offset())
                timestamps.append(message.timestamp()[1])
                keys.append(message.key())
                values.append(message.value())
            columns["offset"].append(pa.array(offsets, pa.int64()))
            columns["timestamp"].append(pa.array(timestamps, pa.int64()))
            columns["key"].append(pa.array(keys, pa.binary()))
            columns["value"].append(pa.array(values, pa.binary()))
        return columns
    finally:
        consumer.close()


if __name__ == "__main__":
    sys.exit(main())
