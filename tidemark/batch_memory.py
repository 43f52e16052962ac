"""How much memory a persist batch needs: the driver is sized to the row budget, and a budget
that cannot fit is refused at start-up, naming the key and a value that fits.

A batch is bounded by its row budget (``persist.max_records_per_batch``), never by the event time
it spans (several aligned steps are packed up to the budget, never past it), so the budget alone
decides what a batch holds. Most batches are written in one pass from the source, but a batch
whose ranges must be known before it is written is cached (spark_jobs/persist/batch.py), so the
heap is sized for one cached batch of decoded rows (the raw value of a valid record is dropped
when it is decoded, see spark_jobs/log_source/decode_stage.py); the rest of the driver's heap is Spark's and
Delta's own, whatever the budget.

Units: bytes for a record, MiB for memory.

This module holds the arithmetic only; the configuration's types (tidemark.stream_config) call it
to refuse a budget at load time. It names what it reads of them as Protocols, so the two modules
do not import each other.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Protocol


class _TypedField(Protocol):
    type: str  # the payload field's type: "string" or a number type


class RowShape(Protocol):
    """What the arithmetic reads of a stream's payload (tidemark.stream_config.PayloadSchema)."""

    fields: Sequence[_TypedField]


class _BatchSettings(Protocol):
    max_records_per_batch: int
    driver_memory_mib: int | None


class BatchedStream(Protocol):
    """What the arithmetic reads of a stream (tidemark.stream_config.StreamConfig)."""

    payload: RowShape
    persist: _BatchSettings


# Spark's own heap (execution, Delta's snapshot state of a table, the query's planning): a
# persist job with a tiny budget runs in this (measured: 640 MiB left headroom for 1,000 records).
BASE_HEAP_MIB = 768
# A decoded row's fixed columns (partition, offsets, times, key, batch id, G, range fields) as
# Spark holds them, rounded up; a string field counts as this much on average.
_FIXED_ROW_BYTES = 160
_STRING_FIELD_BYTES = 48
_NUMBER_FIELD_BYTES = 8
# Cached rows plus the batch being written from them (Parquet encoding buffers, sort) at once.
_WORKING_COPIES = 2
_ROUND_TO_MIB = 128


class BatchMemoryError(ValueError):
    """The row budget cannot fit the memory the job may use. ``key``: the configuration key to
    change; ``reason``: why, and a value that fits. The message is "<key>: <reason>"."""

    def __init__(self, key: str, reason: str):
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason


def record_bytes(payload: RowShape) -> int:
    """Estimated bytes one decoded record takes in a cached batch."""
    return _FIXED_ROW_BYTES + sum(
        _STRING_FIELD_BYTES if field.type == "string" else _NUMBER_FIELD_BYTES for field in payload.columns
    )


def driver_memory_mib(max_records_per_batch: int, payload: RowShape) -> int:
    """The driver heap a persist batch of ``max_records_per_batch`` records needs (MiB), rounded
    up to 128 MiB."""
    batch_mib = max_records_per_batch * record_bytes(payload) * _WORKING_COPIES / 2**20
    needed = BASE_HEAP_MIB + batch_mib
    return int(-(-needed // _ROUND_TO_MIB) * _ROUND_TO_MIB)


# The rest of a job's processes, whatever its budget and its backlog (measured with the uniform
# backlog of `make bench` on 2 cores, 2026-11-30, budgets 50,000 and 200,000, 896 MiB heap): the
# JVM held at most 255 MiB beyond its heap (metaspace, code cache, threads, the Arrow buffers the
# Python source hands over); one Python process of the job at most 310 MiB (the interpreter,
# pyarrow, the Kafka client's fetch buffers, one chunk of records decoded: a read task reads in
# chunks, never a whole range at once). The bound leaves room above both.
JVM_BEYOND_HEAP_MIB = 512
PYTHON_PROCESS_MIB = 384
# Python processes besides the read tasks' workers: the job's driver and the source's runner.
_PYTHON_DRIVER_PROCESSES = 2


def job_memory_bound_mib(driver_heap_mib: int, task_slots: int) -> int:
    """The most memory (MiB of RSS, summed over the job's processes) a persist, backfill or
    recovery job holds, however long its backlog: the driver heap (sized to the row budget, see
    driver_memory_mib), the JVM's own memory beyond it, and a Python process per task slot (the
    cores Spark runs tasks on) plus the driver's and the source's runner. RSS counts a page
    shared by forked workers once per process, so the tree's real footprint is lower."""
    return driver_heap_mib + JVM_BEYOND_HEAP_MIB + PYTHON_PROCESS_MIB * (task_slots + _PYTHON_DRIVER_PROCESSES)


def largest_fitting_budget(limit_mib: int, payload: RowShape) -> int:
    """The largest row budget whose batch fits ``limit_mib`` of driver heap (0 if none does)."""
    room = (limit_mib - BASE_HEAP_MIB) * 2**20
    return max(0, int(room // (record_bytes(payload) * _WORKING_COPIES)) // 1_000 * 1_000)


def check_batch_fits(max_records_per_batch: int, payload: RowShape, limit_mib: int, limit_source: str) -> int:
    """The driver heap (MiB) for the budget; raises BatchMemoryError when it exceeds
    ``limit_mib`` (``limit_source`` says where that limit comes from, for the message)."""
    needed = driver_memory_mib(max_records_per_batch, payload)
    if needed <= limit_mib:
        return needed
    fitting = largest_fitting_budget(limit_mib, payload)
    advice = (
        f"set it to at most {fitting:,}"
        if fitting > 0
        else f"no row budget fits: {limit_source} must be at least {BASE_HEAP_MIB + _ROUND_TO_MIB} MiB"
    )
    raise BatchMemoryError(
        "persist.max_records_per_batch",
        f"a batch of {max_records_per_batch:,} records needs about {needed:,} MiB "
        f"of driver memory, more than the {limit_mib:,} MiB of {limit_source}; {advice}",
    )


def machine_memory_mib() -> int:
    """This machine's physical memory, MiB."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20


def persist_driver_memory_mib(stream: BatchedStream, machine_mib: int, max_records_per_batch: int | None = None) -> int:
    """The driver heap (MiB) a job reading ``stream`` in batches runs with: ``persist.driver_memory``
    when set, else sized to the row budget. Raises BatchMemoryError when the budget does not fit
    that, or (sized) half of the machine's ``machine_mib``: the rest is the JVM's own memory, the
    Python workers' and the operating system's. ``max_records_per_batch`` overrides the
    configured budget (a job's command line)."""
    persist = stream.persist
    budget = max_records_per_batch or persist.max_records_per_batch
    if persist.driver_memory_mib is not None:
        return check_batch_fits(budget, stream.payload, persist.driver_memory_mib, "persist.driver_memory")
    return check_batch_fits(budget, stream.payload, machine_mib // 2, f"half of this machine's {machine_mib:,} MiB")
