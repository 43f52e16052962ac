"""A catch-up's memory is bounded by the row budget, not by the backlog: a persist run over ten
times its budget, its whole process tree (the JVM, the job's Python, the source's runner, every
worker) sampled every 0.5 s, stays within the bound docs/persist-job.md states
(tidemark.batch_memory.job_memory_bound_mib), and so does each process on its own."""

from __future__ import annotations

import os
import time

from benchmarks.process_memory import wait_sampling_peak_memory
from harness.persist_job import batches_persisted, produce, start_persist, telemetry_value, write_stream_config
from tidemark.batch_memory import JVM_BEYOND_HEAP_MIB, PYTHON_PROCESS_MIB, driver_memory_mib, job_memory_bound_mib
from tidemark.stream_config import load_stream

BUDGET = 20_000
BACKLOG = 10 * BUDGET
PARTITIONS = 4
HOURS = 10
MIB = 2**20


def test_a_catch_up_of_ten_times_the_row_budget_stays_within_the_stated_memory_bound(kafka_broker, tmp_path):
    topic = "memory-bound"
    kafka_broker.create_topic(topic, PARTITIONS)
    # The backlog spread evenly over ten whole hours ending two hours ago, round-robin over the
    # partitions: every batch is a full budget of aligned steps.
    first_ms = (int(time.time() * 1000) // 3_600_000 - HOURS - 2) * 3_600_000
    step_ms = HOURS * 3_600_000 // BACKLOG
    produce(
        kafka_broker.bootstrap,
        topic,
        [
            (i % PARTITIONS, telemetry_value(f"scooter-{i % 500}", first_ms + i * step_ms), first_ms + i * step_ms)
            for i in range(BACKLOG)
        ],
    )
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, PARTITIONS, max_records_per_batch=BUDGET)
    # The heap tidemark sizes to the budget (the harness gives every other job 1g).
    heap_mib = driver_memory_mib(BUDGET, load_stream(conf, "telemetry").payload)
    log = tmp_path / "persist.log"

    job = start_persist(
        conf, "--mode", "available_now", log=log, environment={"TIDEMARK_DRIVER_MEMORY": f"{heap_mib}m"}
    )
    peak = wait_sampling_peak_memory(job)

    assert job.returncode == 0, log.read_text()[-3000:]
    batches = batches_persisted(log)
    assert sum(batch["records"] for batch in batches) == BACKLOG
    assert len(batches) >= 10, f"{len(batches)} batches: the budget did not bound them"
    task_slots = os.cpu_count()  # local[*]: a task per core
    largest = {kind: rss // MIB for kind, rss in peak.largest_rss_by_kind.items()}
    report = f"peak RSS {peak.rss // MIB} MiB (PSS {peak.pss // MIB}), heap {heap_mib} MiB, largest by kind {largest}"
    assert peak.rss // MIB <= job_memory_bound_mib(heap_mib, task_slots), report
    assert largest["jvm"] <= heap_mib + JVM_BEYOND_HEAP_MIB, report
    python = {kind: mib for kind, mib in largest.items() if kind != "jvm" and not kind.startswith(("bash", "java"))}
    assert python and max(python.values()) <= PYTHON_PROCESS_MIB, report
