"""Entry point of one driver of a stream family's persist tick: several members' topics into their
own Delta tables, one after another, in one Spark application.

    spark-submit spark_jobs/persist/family_job.py --conf conf/streams.yaml \\
        --stream shops_eu --stream shops_us --result-dir DIR

A JVM takes seconds to start and a session more to warm up; a member with a little new data takes
a fraction of that to persist. So a tick starts a few drivers (the family's ``max_drivers``), each
for a group of members, instead of one per member. Each member runs exactly as
spark_jobs/persist/job.py runs one stream (its checkpoint, ledger, claims, exactly-once), and fails
alone: its error is caught, written down and the next member runs.

Writes ``DIR/result.json`` (tidemark.family_persist_result.FamilyPersistResult) and, for each
member that succeeded, ``DIR/<member>.json`` (its run summary). Exit status: 0 when the result
was written, whatever the members' outcomes (the operator reads them); 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import time
from pathlib import Path

# spark-submit runs this file as a script: the project's root goes first on the path (see job.py).
sys.path[0] = str(Path(__file__).resolve().parents[2])

from spark_jobs.persist.job import persist_named_stream  # noqa: E402
from tidemark.family_persist_result import FamilyPersistResult, MemberOutcome  # noqa: E402
from tidemark.kept_output import KeptOutput  # noqa: E402
from tidemark.typed_file import write_typed_file  # noqa: E402

log = logging.getLogger("tidemark.persist")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="persist-family", description="Persist several members of a family.")
    parser.add_argument(
        "--stream", action="append", required=True, dest="streams", help="a member's stream name (repeat it)"
    )
    parser.add_argument(
        "--conf", default=os.environ.get("TIDEMARK_CONF", "conf/streams.yaml"), help="streams.yaml path"
    )
    parser.add_argument("--result-dir", type=Path, required=True, help="where result.json and the summaries go")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from spark_jobs.json_log import configure_json_logging

    configure_json_logging()
    args = parse_args(argv)
    started = time.monotonic()
    outcomes = [persist_member(args.conf, name, args.result_dir) for name in dict.fromkeys(args.streams)]
    result = FamilyPersistResult(tuple(outcomes), round(time.monotonic() - started, 1))
    write_typed_file(args.result_dir / "result.json", result, atomic=True)
    log.info(
        {
            "event": "family_driver_finished",
            "members": len(outcomes),
            "failed": [outcome.stream for outcome in result.failed()],
            "seconds": result.seconds,
        }
    )
    return 0


def persist_member(conf: str, name: str, result_dir: Path) -> MemberOutcome:
    """One member persisted as spark_jobs/persist/job.py persists a stream; its failure, whatever
    it is, is its outcome (its traceback logged), never the next member's."""
    said = KeptOutput(sys.stderr)
    started = time.monotonic()
    try:
        with contextlib.redirect_stderr(said):
            code, summary = persist_named_stream(conf, name)
    except Exception as error:  # noqa: BLE001 - one member's failure must not end the others' runs
        log.exception("member %s failed", name)
        return MemberOutcome(name, 1, _seconds(started), error=f"{type(error).__name__}: {error}".splitlines()[0])
    if code != 0:
        return MemberOutcome(name, code, _seconds(started), error=said.last_line() or f"exit status {code}")
    summary.write(result_dir / f"{name}.json")
    return MemberOutcome(name, 0, _seconds(started), summary_file=f"{name}.json")


def _seconds(started: float) -> float:
    return round(time.monotonic() - started, 1)


if __name__ == "__main__":
    sys.exit(main())
