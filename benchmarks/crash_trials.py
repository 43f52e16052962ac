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
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "crash_trials.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tidemark-crash-trials-") as folder:
        trials_file = Path(folder) / "trials.jsonl"
        started = time.monotonic()
        completed = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "tests/integration/test_crash_trials.py"],
            cwd=REPO,
            env={**os.environ, "TIDEMARK_CRASH_TRIALS": f"{args.trials}:{args.seed}", "TIDEMARK_CRASH_TRIALS_FILE": str(trials_file)},
        )
        seconds = time.monotonic() - started
        trials = [json.loads(line) for line in trials_file.read_text().splitlines()] if trials_file.exists() else []
    summary = {
        "command": f"benchmarks/crash_trials.py --trials {args.trials} --seed {args.seed}",
        "trials": len(trials),
        "all_assertions_passed": completed.returncode == 0 and len(trials) == args.trials,
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
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "per_trial"}, indent=2))
    print(f"results: {RESULTS.relative_to(REPO)}")
    return 0 if summary["all_assertions_passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
