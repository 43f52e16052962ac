"""The persist job on a transactional topic: how long 800 committed records take, and one batch's ledger.

    .venv/bin/python benchmarks/transactional_topic.py [--transactions 40] [--records 25]
        [--abort-every 5] [--max-records-per-batch 200] [--results PATH]

Starts its own broker (temporary state, free loopback port) and writes the topic a user of Kafka
Streams' or Flink's exactly-once sinks has: --transactions transactions of --records records,
spread over 2 partitions, every --abort-every-th aborted (its records flushed to the log first,
so they are there to be skipped). Event times are the last two hours, in order. Then one
available_now run of the persist job (spark_jobs/persist/job.py), timed from process start (JVM
included) to exit.

Figures: wall time, committed records in the log (what a plain read_committed consumer gets),
records in the lake (events + late + quarantine), records left unread, (partition, offset)
persisted twice, batches, and the ledger rows of one batch whose ranges hold offsets without
data (commit and abort markers, aborted records): its offsets next to its data records.

Printed, and written to benchmarks/results/transactional_topic.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.scratch_environment import scratch_broker, scratch_environment  # noqa: E402
from connectors.jars import ensure_jars, shared_jars_root  # noqa: E402
from stack.kafka_broker import KafkaBroker  # noqa: E402

STREAM = "telemetry"
TOPIC = "bench_transactional"
PARTITIONS = 2
RESULTS = REPO / "benchmarks" / "results" / "transactional_topic.json"


def main() -> int:
    args = _parse_args()
    jars = shared_jars_root()
    ensure_jars(jars, ["kafka", "delta"])
    with tempfile.TemporaryDirectory(prefix="tidemark-bench-txn-") as scratch_name:
        with scratch_broker(Path(scratch_name), jars) as broker:
            figures = run_benchmark(broker, Path(scratch_name), jars, args)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(figures, indent=2) + "\n")
    _print(figures)
    print(f"written to {args.results}")
    return 0


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transactions", type=int, default=40)
    parser.add_argument("--records", type=int, default=25, help="records per transaction (default 25)")
    parser.add_argument("--abort-every", type=int, default=5, help="abort every N-th transaction (default 5)")
    parser.add_argument(
        "--max-records-per-batch", type=int, default=200, help="the persist job's read budget (default 200)"
    )
    parser.add_argument("--results", type=Path, default=RESULTS)
    return parser.parse_args()


def run_benchmark(broker: KafkaBroker, scratch: Path, jars: Path, args: argparse.Namespace) -> dict:
    broker.create_topic(TOPIC, PARTITIONS)
    committed, aborted = _produce(broker.bootstrap, args)
    env = scratch_environment(broker.bootstrap, scratch, jars)
    conf = _config(scratch / "streams.yaml", broker.bootstrap, scratch)
    command = [
        sys.executable,
        str(REPO / "spark_jobs" / "persist" / "job.py"),
        "--stream",
        STREAM,
        "--conf",
        str(conf),
        "--mode",
        "available_now",
        "--max-records-per-batch",
        str(args.max_records_per_batch),
    ]
    import subprocess

    started = time.monotonic()
    with (scratch / "job.log").open("w") as log:
        code = subprocess.run(command, env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT).returncode
    wall_s = time.monotonic() - started
    if code != 0:
        raise SystemExit(f"the persist job failed ({code}):\n" + (scratch / "job.log").read_text()[-3000:])
    lake = _read_lake(scratch / "lake" / STREAM, env)
    in_log = _readable(broker.bootstrap)
    persisted = lake["offsets"]
    return {
        "topic": f"{args.transactions} transactions x {args.records} records over {PARTITIONS} partitions, "
        f"every {args.abort_every}th aborted",
        "committed_records_produced": committed,
        "aborted_records_produced": aborted,
        "committed_records_in_log": len(in_log),
        "records_in_lake": len(persisted),
        "records_unread": len(in_log - set(persisted)),
        "persisted_twice": len(persisted) - len(set(persisted)),
        "aborted_in_lake": len(set(persisted) - in_log),
        "batches": lake["batches"],
        "wall_seconds": round(wall_s, 1),
        "ledger_of_one_batch": lake["one_batch"],
    }


def _produce(bootstrap: str, args: argparse.Namespace) -> tuple[int, int]:
    from confluent_kafka import Producer

    sys.path.insert(0, str(REPO / "tests"))
    from harness.persist_job import telemetry_value

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "tidemark-bench", "log_level": 3})
    producer.init_transactions(60)
    total = args.transactions * args.records
    now_ms = int(time.time() * 1000)
    committed = aborted = 0
    for t in range(args.transactions):
        producer.begin_transaction()
        for i in range(args.records):
            n = t * args.records + i
            event_ms = now_ms - 2 * 3_600_000 + n * 2 * 3_600_000 // total
            producer.produce(
                TOPIC, telemetry_value(f"s{n % 9}", event_ms), partition=n % PARTITIONS, timestamp=event_ms
            )
        producer.flush(60)  # an aborted transaction's records are in the log before the abort
        if (t + 1) % args.abort_every == 0:
            producer.abort_transaction(60)
            aborted += args.records
        else:
            producer.commit_transaction(60)
            committed += args.records
    return committed, aborted


def _readable(bootstrap: str) -> set[tuple[int, int]]:
    sys.path.insert(0, str(REPO / "tests"))
    from harness.log_layouts import readable_offsets

    return readable_offsets(bootstrap, TOPIC, PARTITIONS)


def _config(path: Path, bootstrap: str, scratch: Path) -> Path:
    import yaml

    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    stream = document["streams"][STREAM]
    stream["source"].update(topic=TOPIC, bootstrap_servers=bootstrap, partitions=PARTITIONS)
    stream["lake"].update(root=str(scratch / "lake"), checkpoint_root=str(scratch / "checkpoints"))
    path.write_text(yaml.safe_dump(document))
    return path


def _read_lake(lake: Path, env: dict) -> dict:
    import os

    os.environ.update({k: v for k, v in env.items() if k.startswith(("TIDEMARK_", "PYSPARK_", "SPARK_"))})
    from connectors.lake_storage import is_delta_table
    from connectors.spark_session import lake_spark_session

    spark = lake_spark_session("tidemark-bench-transactional", {"spark.driver.memory": "1g"})
    spark.sparkContext.setLogLevel("ERROR")
    offsets = []
    for table in ("events", "late", "quarantine"):
        if is_delta_table(str(lake / table)):  # a first commit, not a folder (issue 36)
            rows = (
                spark.read.format("delta").load(str(lake / table)).select("source_partition", "source_offset").collect()
            )
            offsets += [(r.source_partition, r.source_offset) for r in rows]
    ledger = [
        row.asDict()
        for row in spark.read.format("delta")
        .load(str(lake / "ledger"))
        .orderBy("step_id", "source_partition")
        .collect()
    ]
    spark.stop()
    columns = (
        "step_id",
        "source_partition",
        "start_offset",
        "end_offset",
        "data_records",
        "records",
        "late",
        "quarantined",
    )

    def offsets_without_data(row) -> int:
        return (
            row["end_offset"]
            - row["start_offset"]
            - row.get("data_records", row["records"] + row["late"] + row["quarantined"])
        )

    showing = next(
        (row["step_id"] for row in ledger if offsets_without_data(row) > 0), ledger[-1]["step_id"] if ledger else None
    )
    return {
        "offsets": offsets,
        "batches": len({row["step_id"] for row in ledger}),
        "one_batch": [{c: row[c] for c in columns if c in row} for row in ledger if row["step_id"] == showing],
    }


def _print(figures: dict) -> None:
    for key, value in figures.items():
        if key != "ledger_of_one_batch":
            print(f"{key:>28}: {value}")
    print("ledger of one batch (offsets [start, end) against the data records they held):")
    for row in figures["ledger_of_one_batch"]:
        print("   ", row)


if __name__ == "__main__":
    sys.exit(main())
