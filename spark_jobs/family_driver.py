"""One driver of a stream family's tick: several members, one after another, in one Spark
application. The persist and maintenance drivers (spark_jobs/persist/family_job.py,
spark_jobs/maintenance/family_job.py) are this loop around their single-stream job.

A JVM takes seconds to start and a session more to warm up; a member with a little to do takes a
fraction of that. So a tick starts a few drivers (the family's ``max_drivers``), each for a group
of members, instead of one per member. Each member runs exactly as the single-stream job runs it
and fails alone: its error is caught, written down, and the next member runs.

Writes ``DIR/result.json`` (tidemark.family_driver_result.FamilyDriverResult) and, for each member
that succeeded, ``DIR/<member>.json`` (its own result). Exit status: 0 when the result was
written, whatever the members' outcomes (the operator reads them); 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tidemark.failure_line import failure_line
from tidemark.family_driver_result import FamilyDriverResult, MemberOutcome
from tidemark.kept_output import KeptOutput
from tidemark.typed_file import write_typed_file

log = logging.getLogger("tidemark.family")

# Runs one member: (its conf path, its name) -> (exit status as the single-stream job's, its own
# result when 0: a value with ``write(path)`` or ``encode()``).
MemberRun = Callable[[str, str], tuple[int, object]]


def parse_args(argv: list[str] | None, job: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=job, description=f"{job}: several members of a family in one driver.")
    parser.add_argument(
        "--stream", action="append", required=True, dest="streams", help="a member's stream name (repeat it)"
    )
    parser.add_argument(
        "--conf", default=os.environ.get("TIDEMARK_CONF", "conf/streams.yaml"), help="streams.yaml path"
    )
    parser.add_argument("--result-dir", type=Path, required=True, help="where result.json and each member's go")
    return parser.parse_args(argv)


def drive(argv: list[str] | None, job: str, run_member: MemberRun) -> int:
    """The driver's main: every member of the command line through ``run_member``, then the result."""
    from spark_jobs.json_log import configure_json_logging

    configure_json_logging()
    args = parse_args(argv, job)
    started = time.monotonic()
    outcomes = [_member(args.conf, name, args.result_dir, run_member) for name in dict.fromkeys(args.streams)]
    result = FamilyDriverResult(tuple(outcomes), round(time.monotonic() - started, 1))
    write_typed_file(args.result_dir / "result.json", result, atomic=True)
    log.info(
        {
            "event": "family_driver_finished",
            "job": job,
            "members": len(outcomes),
            "failed": [outcome.stream for outcome in result.failed()],
            "seconds": result.seconds,
        }
    )
    return 0


def _member(conf: str, name: str, result_dir: Path, run_member: MemberRun) -> MemberOutcome:
    """One member run as its single-stream job runs it; its failure, whatever it is, is its
    outcome (the reason in one line, tidemark.failure_line; the traceback logged), never the
    next member's."""
    said = KeptOutput(sys.stderr)
    started = time.monotonic()
    try:
        with contextlib.redirect_stderr(said):
            code, result = run_member(conf, name)
    except Exception as error:  # noqa: BLE001 - one member's failure must not end the others' runs
        log.exception("member %s failed", name)
        return MemberOutcome(name, 1, _seconds(started), error=failure_line(type(error).__name__, str(error)))
    if code != 0:
        return MemberOutcome(name, code, _seconds(started), error=said.last_line() or f"exit status {code}")
    path = result_dir / f"{name}.json"
    if hasattr(result, "write"):
        result.write(path)
    else:
        path.write_bytes(result.encode())
    return MemberOutcome(name, 0, _seconds(started), summary_file=path.name)


def _seconds(started: float) -> float:
    return round(time.monotonic() - started, 1)
