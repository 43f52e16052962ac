"""Crash trials: SIGKILL at random moments across live, recovery and a backfill into events,
running in turn on one stream, seeded (not in the suite: about half a minute a trial).

    .venv/bin/python benchmarks/crash_trials.py --trials 20 --seed 1

Runs tests/integration/test_crash_trials.py, which kills each trial's job after a random delay,
runs it again to its end, lets live catch up, and asserts the lake holds every produced
(partition, offset) exactly once. Prints and writes the totals: trials, kills, kills that landed
mid-query (after the query started, before it finished), records lost, duplicated.
Results: benchmarks/results/crash_trials.json.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.pytest_trials import run_trials, write_results  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "crash_trials.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    passed, seconds, trials = run_trials(
        ["-s", "tests/integration/test_crash_trials.py"],
        {"TIDEMARK_CRASH_TRIALS": f"{args.trials}:{args.seed}"},
        "TIDEMARK_CRASH_TRIALS_FILE",
    )
    summary = {
        "command": f"benchmarks/crash_trials.py --trials {args.trials} --seed {args.seed}",
        "trials": len(trials),
        "all_assertions_passed": passed and len(trials) == args.trials,
        "by_job": dict(Counter(t["job"] for t in trials)),
        "kills": sum(t["killed"] for t in trials),
        "kills_mid_query": sum(t["killed_mid_query"] for t in trials),
        "checkpoints_deleted": sum(t["checkpoint_deleted"] for t in trials),
        "records_at_end": trials[-1]["records"] if trials else 0,
        "lost": sum(t["lost"] for t in trials),
        "duplicated": sum(t["duplicated"] for t in trials),
        "seconds": round(seconds),
        "per_trial": trials,
    }
    write_results(RESULTS, summary, "per_trial")
    return 0 if summary["all_assertions_passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
