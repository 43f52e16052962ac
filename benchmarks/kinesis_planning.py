"""How long the Kinesis source's driver takes to plan one batch, by shard count (issue 27).

Planning one batch is: list the shards (ListShards, paginated), read every shard ahead into the
driver's buffer (one GetRecords per shard at least, concurrently), and run the planner over the
buffer (tidemark.batch_planner.BatchPlanner.plan_batch). Measured on the embedded loopback Kinesis
(stack.loopback_kinesis: moto's server on 127.0.0.1), with a few records in every shard, for a
curve of shard counts; the loopback server's own cost is in the figure (it is a Python server
answering every call on the same 2 cores), so the figures are an upper bound of the client's.

    .venv/bin/python benchmarks/kinesis_planning.py --shards 50,100,200,400 [--records-per-shard 5]

Prints a table and writes benchmarks/results/kinesis_planning.json; extrapolates linearly to
1,800 shards (the seeds' stream) from the two largest measured points.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from connectors.kinesis_log import KinesisLog  # noqa: E402
from stack.loopback_kinesis import LoopbackKinesis  # noqa: E402
from stack.ports import free_port  # noqa: E402
from tidemark.batch_planner import BatchPlanner  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "kinesis_planning.json"
TARGET_SHARDS = 1_800


def _put(client, stream: str, shards: int, per_shard: int) -> None:
    """``per_shard`` records into each shard (ExplicitHashKey at each shard's start)."""
    listing = client.list_shards(StreamName=stream, MaxResults=10_000)["Shards"]
    records = [
        {"Data": b'{"n": %d}' % i, "PartitionKey": "k", "ExplicitHashKey": shard["HashKeyRange"]["StartingHashKey"]}
        for shard in listing
        for i in range(per_shard)
    ]
    for start in range(0, len(records), 500):
        client.put_records(StreamName=stream, Records=records[start : start + 500])


def measure(kinesis: LoopbackKinesis, shards: int, per_shard: int) -> dict:
    """Cold planning (a fresh driver: list, an iterator and a read per shard, plan) and steady
    planning (the next batch, one new record per shard: iterators reused, one read per shard)."""
    stream = f"planning-{shards}"
    kinesis.create_stream(stream, shards)
    client = kinesis.client()
    _put(client, stream, shards, per_shard)
    log = KinesisLog(stream, kinesis.region, kinesis.endpoint, client=client)
    planner = BatchPlanner(30_000, 900_000, 300_000, 300_000, align=True)
    try:
        started = time.perf_counter()
        listing = log.shards(refresh=True)
        listed = time.perf_counter()
        positions = {p: shard.starting_sequence for p, shard in listing.items()}
        log.fill(positions, None, 1_000)
        filled = time.perf_counter()
        ends = {p: b.end for p, b in log.bounds().items()}
        state = planner.initial(positions, ends, log)
        planned = planner.plan_batch(state, ends, {}, log, 200_000)
        done = time.perf_counter()
        records = sum(log.records_between(p, positions[p], planned.partitions[p].position) for p in positions)
        cold_calls = log.calls

        _put(client, stream, shards, 1)
        steady_started = time.perf_counter()
        log.fill(planned.positions(), None, 1_000)
        ends = {p: b.end for p, b in log.bounds().items()}
        planner.plan_batch(planned, ends, {}, log, 200_000)
        steady_s = time.perf_counter() - steady_started
        return {
            "shards": shards,
            "records_planned": records,
            "list_s": round(listed - started, 3),
            "fill_s": round(filled - listed, 3),
            "plan_s": round(done - filled, 3),
            "cold_total_s": round(done - started, 3),
            "cold_calls": cold_calls,
            "steady_total_s": round(steady_s, 3),
            "steady_calls": log.calls - cold_calls,
        }
    finally:
        log.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", default="50,100,200,400", help="comma-separated shard counts")
    parser.add_argument("--records-per-shard", type=int, default=5)
    args = parser.parse_args(argv)
    counts = [int(part) for part in args.shards.split(",")]
    with tempfile.TemporaryDirectory(prefix="tidemark-kinesis-bench-") as state:
        kinesis = LoopbackKinesis(Path(state), free_port())
        kinesis.start()
        try:
            rows = [measure(kinesis, n, args.records_per_shard) for n in counts]
        finally:
            kinesis.stop()
    print(
        f"{'shards':>7} {'list s':>7} {'fill s':>7} {'plan s':>7} {'cold s':>7} {'calls':>6} {'steady s':>9} {'calls':>6}"
    )
    for row in rows:
        print(
            f"{row['shards']:>7} {row['list_s']:>7} {row['fill_s']:>7} {row['plan_s']:>7} {row['cold_total_s']:>7} "
            f"{row['cold_calls']:>6} {row['steady_total_s']:>9} {row['steady_calls']:>6}"
        )
    small, large = rows[-2], rows[-1]

    def at_target(key: str) -> float:
        per_shard_s = (large[key] - small[key]) / (large["shards"] - small["shards"])
        return round(large[key] + per_shard_s * (TARGET_SHARDS - large["shards"]), 2)

    extrapolated = {"cold_total_s": at_target("cold_total_s"), "steady_total_s": at_target("steady_total_s")}
    print(f"extrapolated to {TARGET_SHARDS} shards (linear from the two largest points): {extrapolated}")
    RESULTS.write_text(
        json.dumps(
            {
                "command": "benchmarks/kinesis_planning.py " + " ".join(argv or sys.argv[1:]),
                "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "machine": f"{platform.python_version()} {platform.platform()}",
                "rows": rows,
                "extrapolated_at_1800_shards": extrapolated,
            },
            indent=2,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
