"""The ``partitions`` scenario of the catch-up benchmark (catch_up_side_by_side.py): does a batch
cost grow with the partition count when the data does not?

    .venv/bin/python benchmarks/catch_up_side_by_side.py --scenarios partitions
        [--partition-records 5120] [--planning-partitions 1800]

The same records (``--partition-records``, 5,120 by default: the probe of issue 11) over the
same hour of event time, dealt round-robin over topics of 4, 64 and 256 partitions, each record's
log timestamp its event time:

    (a) tidemark's persist job on each topic (wall time of the whole process, peak RSS);
    (b) Spark's own Kafka source on the 256-partition topic, in the same run.

Targets: (a) at 256 partitions takes at most 1.3x (a) at 4; (a) at 256 is at least as fast as (b)
at 256 (wall time a/b <= 1.0). Peak RSS of (a) at 4 and 256 partitions is reported side by side.

Planning, without Spark: the source's planner (spark_jobs.log_source.reader.LogReader) in this
process against a topic of ``--planning-partitions`` partitions holding 10 records per partition
over an hour: the seconds of its start (initialOffset), of its first batch (a backlog: several
aligned steps packed up to the row budget, W_p unknown everywhere, the most questions a batch
asks) and of the following batches, and the read tasks of the first batch; three times, each
with a fresh planner. Target: the first batch plans in at most 2 s (the median of the three).
"""

from __future__ import annotations

import json
import random
import sys
import time

from benchmarks.catch_up_figures import failed, ratio, target

SCALING_PARTITIONS = (4, 64, 256)
PLANNING_RECORDS_PER_PARTITION = 10
PLANNING_REPEATS = 3
HOUR_MS = 3_600_000


def partitions_scenario(bench) -> dict:
    records = bench.args.partition_records
    span_end_ms = _hour_ended_an_hour_ago()
    runs: dict[str, dict] = {}
    for count in SCALING_PARTITIONS:
        topic = f"bench_partitions_{count}"
        bench.create_topic(topic, count)
        bench.topic_partitions[topic] = count
        produce_spread(bench.bootstrap, topic, count, records, span_end_ms)
        runs[f"a {count}p"] = bench.tidemark_run(topic, f"partitions_a_{count}", records)
    widest = SCALING_PARTITIONS[-1]
    runs[f"b {widest}p"] = bench.peer_run(f"bench_partitions_{widest}", f"partitions_b_{widest}", records)
    planning = planning_figures(bench, bench.args.planning_partitions, bench.args.max_records_per_batch)
    first_batch_s = None if failed(planning) else planning["first_batch_seconds"]
    return {
        "backlog": {
            "records": records,
            "hours": 1,
            "profiles": [f"round-robin over {', '.join(str(n) for n in SCALING_PARTITIONS)} partitions"],
            "window": [span_end_ms - HOUR_MS, span_end_ms],
        },
        "runs": runs,
        "planning": planning,
        "targets": {
            f"wall_seconds a {widest}p / a 4p": ratio(runs, f"a {widest}p", ["a 4p"], "wall_seconds", limit=1.3),
            f"wall_seconds a {widest}p / b {widest}p": ratio(
                runs, f"a {widest}p", [f"b {widest}p"], "wall_seconds", limit=1.0
            ),
            f"first batch planning seconds, {bench.args.planning_partitions} partitions": target(
                first_batch_s, 2.0, "planning failed"
            ),
            # Not a target: what the job's memory does with 64x the partitions, the same data.
            f"peak_rss a {widest}p / a 4p": ratio(runs, f"a {widest}p", ["a 4p"], "peak_rss_megabytes"),
        },
    }


def produce_spread(bootstrap: str, topic: str, partitions: int, records: int, span_end_ms: int) -> None:
    """``records`` telemetry records over the hour before ``span_end_ms``, record i at
    span start + i/records of the hour on partition i mod ``partitions``: the same event times
    whatever the partition count, in time order within each partition (none late)."""
    from confluent_kafka import Producer

    from generator.scooters import ScooterFleet

    print(
        f"  producing {topic}: {records:,} records over 1 h on {partitions} partitions ...", file=sys.stderr, flush=True
    )
    fleets = [ScooterFleet(p, random.Random(p)) for p in range(partitions)]
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True})
    start_ms = span_end_ms - HOUR_MS
    for i in range(records):
        partition = i % partitions
        event_time_ms = start_ms + i * HOUR_MS // records
        value = json.dumps(fleets[partition].next_payload(event_time_ms)).encode()
        while True:
            try:
                producer.produce(topic, value, partition=partition, timestamp=event_time_ms)
                break
            except BufferError:
                producer.poll(0.1)
    remaining = producer.flush(60)
    if remaining:
        raise RuntimeError(f"{remaining} records to {topic} were not delivered")


def planning_figures(bench, partitions: int, max_records_per_batch: int) -> dict:
    """The source's planner alone on a topic of ``partitions`` partitions (see the module doc)."""
    from spark_jobs.log_source.options import LogSourceOptions
    from spark_jobs.log_source.reader import LogReader

    topic = f"bench_planning_{partitions}"
    print(f"  planning on {topic} ...", file=sys.stderr, flush=True)
    try:
        created = time.monotonic()
        bench.create_topic(topic, partitions)
        create_s = time.monotonic() - created
        bench.topic_partitions[topic] = partitions
        produce_spread(
            bench.bootstrap, topic, partitions, partitions * PLANNING_RECORDS_PER_PARTITION, _hour_ended_an_hour_ago()
        )
        stream = bench.load_stream(bench.stream_config(bench.scratch / "planning", topic))
        tolerances = stream.event_time
        options = LogSourceOptions(
            stream.source.connection(),
            max_records_per_batch=max_records_per_batch,
            max_out_of_orderness_ms=tolerances.max_out_of_orderness_ms,
            max_drift_ms=tolerances.max_drift_ms,
            idle_timeout_ms=tolerances.idle_timeout_ms,
            max_future_skew_ms=tolerances.max_future_skew_ms,
            read_tasks=2,
            max_partitions=max(partitions, stream.source.max_partitions),
        )
        repeats = [_plan_three_batches(LogReader(options), max_records_per_batch) for _ in range(PLANNING_REPEATS)]
    except Exception as error:  # noqa: BLE001 - a failed planning run is recorded, the scenario goes on
        return {"failed": f"{type(error).__name__}: {error}"}
    first = sorted(repeat["batches"][0]["seconds"] for repeat in repeats)
    return {
        "partitions": partitions,
        "records": partitions * PLANNING_RECORDS_PER_PARTITION,
        "create_topic_seconds": round(create_s, 1),
        "repeats": repeats,
        # The median of the repeats: one figure, less at the mercy of one noisy moment.
        "initial_seconds": sorted(repeat["initial_seconds"] for repeat in repeats)[len(repeats) // 2],
        "first_batch_seconds": first[len(first) // 2],
        "batches": repeats[0]["batches"],
        "first_batch_partitions_per_read_task": repeats[0]["first_batch_partitions_per_read_task"],
    }


def _plan_three_batches(reader, max_records_per_batch: int) -> dict:
    """A fresh planner from the topic's start: its start, then three batches planned one after
    the other (each from the one before, as Spark asks), and their read tasks."""
    from pyspark.sql.streaming.datasource import ReadMaxRows

    try:
        started = time.monotonic()
        offset = reader.initialOffset()
        initial_s = time.monotonic() - started
        batches = []
        first_tasks = None
        for _ in range(3):
            started = time.monotonic()
            planned = reader.latestOffset(offset, ReadMaxRows(max_records_per_batch))
            plan_s = time.monotonic() - started
            started = time.monotonic()
            tasks = reader.partitions(offset, planned)
            tasks_s = time.monotonic() - started
            batches.append(
                {
                    "seconds": round(plan_s, 3),
                    "tasks_seconds": round(tasks_s, 3),
                    "steps": len(planned.get("steps") or []) or 1,
                    "read_tasks": len(tasks),
                }
            )
            if first_tasks is None:
                first_tasks = [len(task.ranges) for task in tasks]
            offset = planned
    finally:
        reader.stop()
    return {
        "initial_seconds": round(initial_s, 3),
        "batches": batches,
        "first_batch_partitions_per_read_task": first_tasks,
    }


def _hour_ended_an_hour_ago() -> int:
    """The end of the span: the hour boundary an hour or more ago (no record near the future guard)."""
    now_ms = int(time.time() * 1000)
    return (now_ms // HOUR_MS - 1) * HOUR_MS
