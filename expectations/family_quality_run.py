"""One family quality tick's checks: several members, one after another, in one process.

    python expectations/family_quality_run.py --conf conf/streams.yaml --request REQUEST.json \
        --report-dir REPORTS --result-dir DIR

Great Expectations takes seconds to import; a member's checks take a fraction of that. Each member
is checked exactly as ``quality_run.py --stream <member> --hours ... --reconcile`` checks a stream
(or, for a sweep request, ``--sweep``: spark-submitted, one Spark session for every member)
(its own reports, Data Docs and damage memory under ``REPORTS/<member>/``), and fails alone: its
exit status and last line are its outcome, and the next member is checked. Each completed check
leaves the member's memory (tidemark.quality_look.LastCheck), as every quality run does.

Writes ``DIR/result.json`` (tidemark.family_quality_request.FamilyQualityResult) and each checked
member's summary as ``DIR/<member>.json``. Exit status 0 when the result was written; 2 for bad
arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from expectations.quality_run import configure_logging  # noqa: E402
from expectations.quality_run import main as check_stream
from tidemark.family_quality_request import (  # noqa: E402
    FamilyQualityRequest,
    FamilyQualityResult,
    MemberCheck,
    MemberCheckOutcome,
)
from tidemark.kept_output import KeptOutput  # noqa: E402
from tidemark.typed_file import write_typed_file  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="family_quality_run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--conf", required=True)
    parser.add_argument("--request", required=True, type=Path)
    parser.add_argument("--report-dir", required=True, type=Path)
    parser.add_argument("--result-dir", required=True, type=Path)
    args = parser.parse_args(argv)
    request = FamilyQualityRequest.decode(args.request.read_bytes())
    started = time.monotonic()
    outcomes = tuple(_check(member, request.run_name, request.sweep, args) for member in request.members)
    write_typed_file(args.result_dir / "result.json", FamilyQualityResult(outcomes, _since(started)), atomic=True)
    return 0


def _check(member: MemberCheck, run_name: str, sweep: bool, args: argparse.Namespace) -> MemberCheckOutcome:
    started = time.monotonic()
    result_file = f"{member.stream}.json"
    argv = [
        "--stream", member.stream,
        "--conf", args.conf,
        "--report-dir", str(args.report_dir),
        "--gx-dir", str(args.report_dir / member.stream / "gx"),
        "--run-name", run_name,
        "--result", str(args.result_dir / result_file),
        "--sweep" if sweep else "--reconcile",
    ]  # fmt: skip
    if member.hours:
        argv += ["--hours", ",".join(member.hours)]
    said = KeptOutput(sys.stderr)
    try:
        with contextlib.redirect_stderr(said):
            code = check_stream(argv)
    except Exception as error:  # noqa: BLE001 - one member's failure must not end the others' checks
        return MemberCheckOutcome(member.stream, 1, _since(started), error=f"{type(error).__name__}: {error}")
    if code != 0:
        return MemberCheckOutcome(member.stream, code, _since(started), error=said.last_line() or f"exit {code}")
    return MemberCheckOutcome(member.stream, 0, _since(started), result_file=result_file)


def _since(started: float) -> float:
    return round(time.monotonic() - started, 2)


if __name__ == "__main__":
    configure_logging()
    sys.exit(main())
