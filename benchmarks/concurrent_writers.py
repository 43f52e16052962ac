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
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.pytest_trials import run_trials, write_results  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "concurrent_writers.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2", help='comma-separated seeds, e.g. "0,1,2"')
    args = parser.parse_args()
    passed, seconds, cases = run_trials(
        [
            "tests/integration/test_concurrent_writers.py",
            "-k",
            "two_writers_at_once",
        ],  # the matrix only, not the suite's S3 case
        {"TIDEMARK_WRITER_TRIALS": args.seeds},
        "TIDEMARK_WRITER_TRIALS_FILE",
    )
    expected_cases = 9 * len(args.seeds.split(","))
    summary = {
        "command": f"benchmarks/concurrent_writers.py --seeds {args.seeds}",
        "cases": expected_cases,
        "cases_run": len(cases),
        "all_assertions_passed": passed and len(cases) == expected_cases,
        "pairs_written_twice": sum(case["written_twice"] for case in cases),
        "commit_conflicts_retried": sum(case["commit_conflicts_retried"] for case in cases),
        "cases_with_a_conflict_retried": sum(1 for case in cases if case["commit_conflicts_retried"]),
        "seconds": round(seconds),
        "per_case": cases,
    }
    write_results(RESULTS, summary, "per_case")
    return 0 if summary["all_assertions_passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
