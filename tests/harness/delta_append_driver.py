"""One Spark driver of the multi-writer proof: makes one lake's tables and appends one acknowledged
row per round to Delta tables, in lock step with the other drivers.

    python -m harness.delta_append_driver --table s3a://... --rounds 6 [--table s3://... --rounds 12]
        --driver 1 --drivers 3 --sync DIR --acks DIR [--create] [--lake DIR --make-rounds 3]

``--lake`` and ``--make-rounds`` first: in round r the drivers meet at a barrier and each makes
the tables of a fresh stream named ``round<r>`` under ``--lake`` (LakeTables.ensure), all at the
same moment; the outcome of each round is a JSON line in ``acks/make.<driver>`` (the tables this
driver made, or the error: the driver goes on). A ``--table`` may be an s3a://, s3:// or local path.

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
import json
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
    parser.add_argument("--lake", type=Path)
    parser.add_argument("--make-rounds", type=int, default=0)
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
    for round_ in range(args.make_rounds):
        _barrier(args.sync, f"make-{round_}", args.driver, args.drivers)
        _record(args.acks / f"make.{args.driver}", _make_tables(spark, args.lake, round_))
    for round_ in range(max(args.rounds)):
        row = f"d{args.driver}-r{round_}"
        frame = spark.createDataFrame([(row, args.driver, round_)], SCHEMA)
        for number, table in enumerate(args.table):
            if round_ >= args.rounds[number]:
                continue
            # Per table: the drivers leave each barrier together, so their commits collide.
            _barrier(args.sync, f"round-{round_}-{number}", args.driver, args.drivers)
            started = time.monotonic()
            try:
                frame.write.format("delta").mode("append").save(table)
            except Exception as error:
                # Not acknowledged, and the driver goes on: the control's store overwrites commits,
                # and a reader of one being replaced fails (S3 412). A put-if-absent table's test
                # requires every append acknowledged, so a failure there still fails it.
                print(f"round {round_} table {number}: FAILED {type(error).__name__}: {str(error)[:300]}", flush=True)
                continue
            print(f"round {round_} table {number}: committed in {time.monotonic() - started:.2f} s", flush=True)
            _acknowledge(args.acks / f"{number}.{args.driver}", row)
    spark.stop()


def _make_tables(spark, lake: Path, round_: int) -> dict:
    """Make the tables of stream ``round<round_>`` under ``lake``: which this driver made, or why not."""
    import msgspec

    from spark_jobs.lake.tables import LakeTables
    from tidemark.stream_config import load_stream

    repo = Path(__file__).resolve().parents[2]
    stream = load_stream(
        repo / "conf" / "streams.yaml",
        "telemetry",
        {"TIDEMARK_LAKE_ROOT": str(lake), "TIDEMARK_CHECKPOINT_ROOT": str(lake / "checkpoints")},
    )
    try:
        made = LakeTables(spark, msgspec.structs.replace(stream, name=f"round{round_}")).ensure()
    except Exception as error:  # the outcome the test reads
        return {"round": round_, "error": f"{type(error).__name__}: {str(error)[:300]}"}
    return {"round": round_, "made": sorted(made)}


def _record(path: Path, outcome: dict) -> None:
    _acknowledge(path, json.dumps(outcome))


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
