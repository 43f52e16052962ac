"""Writer trials: every pair of live, recovery and a backfill into events, started at every moment
relative to the other's first commit, over several seeds (not in the suite: about 40 s a case).

    .venv/bin/python benchmarks/concurrent_writers.py [--seeds 0,1,2]

Runs tests/integration/test_concurrent_writers.py's own test for the whole matrix (3 pairs × 3
moments × seeds; the seed moves each start by a jitter of up to a second), which asserts each
case: every produced (partition, offset) once, in the table a clean run routes it to, and the
claimers' counts equal to what their MERGEs inserted. Each case's figures go to a results file;
this script prints and writes the totals: cases, cases that passed, pairs written twice, commit
conflicts retried. Results: benchmarks/results/concurrent_writers.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "concurrent_writers.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2", help='comma-separated seeds, e.g. "0,1,2"')
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tidemark-writer-trials-") as folder:
        trials_file = Path(folder) / "trials.jsonl"
        started = time.monotonic()
        completed = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/integration/test_concurrent_writers.py",
             "-k", "two_writers_at_once"],  # the matrix only, not the suite's S3 case
            cwd=REPO,
            env={**os.environ, "TIDEMARK_WRITER_TRIALS": args.seeds, "TIDEMARK_WRITER_TRIALS_FILE": str(trials_file)},
        )
        seconds = time.monotonic() - started
        cases = [json.loads(line) for line in trials_file.read_text().splitlines()] if trials_file.exists() else []
    expected_cases = 9 * len(args.seeds.split(","))
    summary = {
        "command": f"benchmarks/concurrent_writers.py --seeds {args.seeds}",
        "cases": expected_cases,
        "cases_run": len(cases),
        "all_assertions_passed": completed.returncode == 0 and len(cases) == expected_cases,
        "pairs_written_twice": sum(case["written_twice"] for case in cases),
        "commit_conflicts_retried": sum(case["commit_conflicts_retried"] for case in cases),
        "cases_with_a_conflict_retried": sum(1 for case in cases if case["commit_conflicts_retried"]),
        "seconds": round(seconds),
        "per_case": cases,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "per_case"}, indent=2))
    print(f"results: {RESULTS.relative_to(REPO)}")
    return 0 if summary["all_assertions_passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
