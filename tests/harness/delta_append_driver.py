"""One Spark driver of the multi-writer proof: appends one acknowledged row per round to a Delta table.

    python -m harness.delta_append_driver --table s3a://... --driver 1 --drivers 3 --rounds 12
        --sync DIR --acks FILE [--create] [--log-store CLASS]

Drivers meet at a barrier (files in DIR) before every round, so their commits race for the same
version. A row is acknowledged (its id appended to FILE, flushed to disk) only after ``save()``
returned: what a caller of the writer would take as persisted. ``--create`` makes this driver
create the table (version 0) before the first barrier; ``--log-store`` replaces the LogStore for
s3a (the proof that the harness can fail runs delta-spark's default one). Storage settings come
from the environment (connectors.lake_storage), as in every tidemark job.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

SCHEMA = "id string, driver int, round int"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--table", required=True)
    parser.add_argument("--driver", type=int, required=True)
    parser.add_argument("--drivers", type=int, required=True)
    parser.add_argument("--rounds", type=int, required=True)
    parser.add_argument("--sync", type=Path, required=True)
    parser.add_argument("--acks", type=Path, required=True)
    parser.add_argument("--create", action="store_true")
    parser.add_argument("--log-store")
    args = parser.parse_args()

    from connectors.spark_session import lake_spark_session

    extra = {"spark.driver.memory": "512m", "spark.sql.shuffle.partitions": "1", "spark.default.parallelism": "1"}
    if args.log_store:
        extra["spark.delta.logStore.s3a.impl"] = args.log_store
    spark = lake_spark_session(f"append-driver-{args.driver}", extra)
    spark.sparkContext.setLogLevel("ERROR")
    if args.create:
        spark.createDataFrame([], SCHEMA).write.format("delta").mode("append").save(args.table)
    _barrier(args.sync, "ready", args.driver, args.drivers)
    with open(args.acks, "a") as acks:
        for round_ in range(args.rounds):
            row = f"d{args.driver}-r{round_}"
            frame = spark.createDataFrame([(row, args.driver, round_)], SCHEMA)
            _barrier(args.sync, f"round-{round_}", args.driver, args.drivers)
            frame.write.format("delta").mode("append").save(args.table)
            acks.write(row + "\n")
            acks.flush()
            os.fsync(acks.fileno())
    spark.stop()


def _barrier(folder: Path, name: str, driver: int, drivers: int, timeout_s: float = 300.0) -> None:
    (folder / f"{name}.{driver}").touch()
    deadline = time.monotonic() + timeout_s
    while len(list(folder.glob(f"{name}.*"))) < drivers:
        if time.monotonic() > deadline:
            raise TimeoutError(f"barrier {name}: the other drivers did not arrive within {timeout_s:.0f} s")
        time.sleep(0.005)


if __name__ == "__main__":
    main()
