"""The claims table after 1,000 recoveries, settled or not: what every live batch and claim pays.

    flock /tmp/tidemark-heavy.lock .venv/bin/python benchmarks/claims_table.py [--recoveries 1000]

Makes ``--recoveries`` claims the way recovery runs make them (spark_jobs.lake.claims_table
.ClaimsTable.claim: one Delta commit each, routed against every claim before it), on the demo's
four partitions, each a range of up to 50 offsets after the previous one of its partition, with
live's G moving a minute every 25 recoveries; 98% of the claimers release their claim when they
finish (a commit each), 2% die. No records are written: the table is what is measured. Then, in
one Spark session, before and after the maintenance job settles the table
(spark_jobs.maintenance.claims_settling):

- the table's rows, data files and commits in its log;
- what the live job pays when the table moved: reading every claim (``all_claims``: the rows, and
  the history for the versions of claims not yet settled), median of 5;
- what a claimer pays: one more claim (commit, version lookup, routing read), median of 5 (each
  released, so the measured ones do not accumulate);
- the settlement's own time.

The decisions must be the same before and after settling (the offsets live leaves out, the G of
every offset), else the benchmark fails. Prints the figures and writes
benchmarks/results/claims_table.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.scratch_environment import benchmark_spark_session, scratch_stream_config  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "claims_table.json"
PARTITIONS = 4  # the demo's
G0 = 1_795_000_000_000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recoveries", type=int, default=1000)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()

    spark = benchmark_spark_session("tidemark-bench-claims")
    with tempfile.TemporaryDirectory(prefix="tidemark-bench-claims-") as scratch:
        figures = run(spark, Path(scratch), args.recoveries)
    spark.stop()
    figures["command"] = f"benchmarks/claims_table.py --recoveries {args.recoveries}"
    figures["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version()}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    return 0


def run(spark, scratch: Path, recoveries: int) -> dict:
    from spark_jobs.lake.claims_table import ClaimsTable
    from spark_jobs.lake.tables import LakeTables
    from spark_jobs.maintenance.claims_settling import settle_claims
    from tidemark.stream_config import load_stream

    stream = load_stream(scratch_stream_config(scratch), "telemetry")
    tables = LakeTables(spark, stream)
    tables.ensure()
    claims = ClaimsTable(spark, tables)
    rng = random.Random(40)
    position = dict.fromkeys(range(PARTITIONS), 0)
    started = time.monotonic()
    for number in range(recoveries):
        partition = number % PARTITIONS
        start = position[partition]
        position[partition] += rng.randrange(1, 50)
        claim = claims.claim(
            stream.name, "recovery", {partition: (start, position[partition])}, (), G0 + 60_000 * (number // 25)
        )
        if rng.random() < 0.98:
            claims.release(claim)
    made_s = time.monotonic() - started
    bound = {p: (0, end) for p, end in position.items()}  # the claims measured below lie past it

    before = _measure(claims, stream, position, bound)
    t0 = time.monotonic()
    settled = settle_claims(spark, stream)
    settle_s = time.monotonic() - t0
    after = _measure(claims, stream, position, bound)
    if after["decisions"] != before["decisions"]:
        raise SystemExit("settling changed a decision: the offsets live leaves out or an offset's G")
    for figures in (before, after):
        del figures["decisions"]
    return {
        "recoveries": recoveries,
        "claims_made_s": round(made_s, 1),
        "before_settling": before,
        "settlement": {"seconds": round(settle_s, 2), **settled.to_json()},
        "after_settling": after,
        "all_claims_after_over_before": round(after["all_claims_ms"] / before["all_claims_ms"], 3),
        "one_claim_after_over_before": round(after["one_claim_ms"] / before["one_claim_ms"], 3),
    }


def _measure(claims, stream, position: dict[int, int], bound: dict[int, tuple[int, int]]) -> dict:
    from tidemark.write_claims import covered_parts, earliest_claim_routing

    reads = []
    for _ in range(5):
        t0 = time.monotonic()
        everything = claims.all_claims()
        reads.append(time.monotonic() - t0)
    made = []
    for _ in range(5):
        t0 = time.monotonic()
        claim = claims.claim(stream.name, "recovery", {0: (position[0], position[0] + 5)}, (), G0)
        made.append(time.monotonic() - t0)
        claims.release(claim)
        position[0] += 5
    rows, files = claims.census()
    log = Path(stream.table_path("claims")) / "_delta_log"
    return {
        "rows": rows,
        "data_files": files,
        "log_commits": len(list(log.glob("*.json"))),
        "all_claims_ms": round(statistics.median(reads) * 1000, 1),
        "one_claim_ms": round(statistics.median(made) * 1000, 1),
        "decisions": (
            covered_parts(bound, ((c.partition, c.start, c.end) for c in everything)),
            {
                (r.partition, o): r.global_watermark_ms
                for r in earliest_claim_routing(bound, everything)
                for o in range(r.start, r.end)
            },
        ),
    }


if __name__ == "__main__":
    sys.exit(main())
