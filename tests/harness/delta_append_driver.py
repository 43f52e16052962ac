"""One Spark driver of the multi-writer proof: appends one acknowledged row per round to Delta tables.

    python -m harness.delta_append_driver --table s3a://... --rounds 6 [--table s3://... --rounds 12]
        --driver 1 --drivers 3 --sync DIR --acks DIR [--create]

Drivers meet at a barrier (files in DIR) before every append, so their commits race for the same
versions. A row is acknowledged (its id appended to ``acks/<table>.<driver>``, flushed to disk)
only after ``save()`` returned: what a caller of the writer would take as persisted. ``--create``
makes this driver create the tables (version 0) before the first barrier. Each ``--table`` takes
the ``--rounds`` given after it: in round r a driver appends to every table with more than r rounds.

Storage settings come from the environment (connectors.lake_storage), as in every tidemark job,
so an s3a:// table commits through tidemark's put-if-absent LogStore. An s3:// table is the
control: the same S3A filesystem, but delta-spark's default S3SingleDriverLogStore, the store
the proof must show losing commits.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

SCHEMA = "id string, driver int, round int"
# s3:// goes through S3A too, but commits with delta-spark's default log store.
CONTROL = {
    "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
    "spark.delta.logStore.s3.impl": "io.delta.storage.S3SingleDriverLogStore",
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--table", action="append", required=True)
    parser.add_argument("--driver", type=int, required=True)
    parser.add_argument("--drivers", type=int, required=True)
    parser.add_argument("--rounds", type=int, action="append", required=True)
    parser.add_argument("--sync", type=Path, required=True)
    parser.add_argument("--acks", type=Path, required=True)
    parser.add_argument("--create", action="store_true")
    args = parser.parse_args()
    if len(args.rounds) != len(args.table):
        parser.error("give each --table its --rounds")

    from connectors.spark_session import lake_spark_session

    extra = {
        "spark.driver.memory": "512m",
        "spark.sql.shuffle.partitions": "1",
        "spark.default.parallelism": "1",
        **CONTROL,
    }
    spark = lake_spark_session(f"append-driver-{args.driver}", extra)
    spark.sparkContext.setLogLevel("ERROR")
    if args.create:
        for table in args.table:
            spark.createDataFrame([], SCHEMA).write.format("delta").mode("append").save(table)
    _barrier(args.sync, "ready", args.driver, args.drivers)
    for round_ in range(max(args.rounds)):
        row = f"d{args.driver}-r{round_}"
        frame = spark.createDataFrame([(row, args.driver, round_)], SCHEMA)
        for number, table in enumerate(args.table):
            if round_ >= args.rounds[number]:
                continue
            # Per table: the drivers leave each barrier together, so their commits collide.
            _barrier(args.sync, f"round-{round_}-{number}", args.driver, args.drivers)
            started = time.monotonic()
            frame.write.format("delta").mode("append").save(table)
            print(f"round {round_} table {number}: committed in {time.monotonic() - started:.2f} s", flush=True)
            _acknowledge(args.acks / f"{number}.{args.driver}", row)
    spark.stop()


def _acknowledge(path: Path, row: str) -> None:
    with open(path, "a") as acks:
        acks.write(row + "\n")
        acks.flush()
        os.fsync(acks.fileno())


def _barrier(folder: Path, name: str, driver: int, drivers: int, timeout_s: float = 300.0) -> None:
    (folder / f"{name}.{driver}").touch()
    deadline = time.monotonic() + timeout_s
    while len(list(folder.glob(f"{name}.*"))) < drivers:
        if time.monotonic() > deadline:
            raise TimeoutError(f"barrier {name}: the other drivers did not arrive within {timeout_s:.0f} s")
        time.sleep(0.005)


if __name__ == "__main__":
    main()
