"""Check a family's members at one quality tick: a look without Great Expectations decides which
members need a check (connectors.quality_look), and one child process checks them one after
another (expectations/family_quality_run.py)."""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tidemark_airflow.spark_job_operator import TidemarkSparkJobOperator, reports_root


class FamilyQualityOperator(TidemarkSparkJobOperator):
    """Checks the members of ``family`` (``members``: its members when the DAG was parsed) that
    need it: ``hours`` ({member: [ISO hour starts]}, templated: the sealed-hours events of the
    run) plus every member whose tables changed, whose log holds records its lake lacks, or
    whose last check did not pass (tidemark.quality_look). Logs one line per member checked and
    why, and one for the rest.

    A member with no events table is not persisted yet (a new member before its first persist
    run ends, a topic deleted before it): it has nothing to check, so it is not checked and fails
    nothing here; its persist tick is where it fails and alarms, as for maintenance. Without this
    a new family's first quality tick, which may come while its first persist tick still creates
    the members' tables, failed and alarmed once for every member.

    Returns ``{"summaries": {member: its QualitySummary as JSON}, "failed": [{"stream", "error"}],
    "unchanged": [members], "not_persisted": [members]}``: a member whose check failed is in
    ``failed`` and the others' summaries stand; the DAG's verdict fails for it.

    ``sweep``: the family's sweep instead. Every member with an events table is swept, one after
    another in one spark-submit (one Spark session for all), each as a stream's sweep; no hours."""

    template_fields = (*TidemarkSparkJobOperator.template_fields, "hours")

    def __init__(
        self,
        *,
        family: str,
        members: list[str],
        conf_path: str,
        hours: Any = None,
        sweep: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(stream=members[0], conf_path=conf_path, job="expectations/family_quality_run.py", **kwargs)
        if sweep and hours is not None:
            raise ValueError("a sweep checks every hour the log retains: give it no hours")
        self.family = family
        self.members = list(members)
        self.hours = hours
        self.sweep = sweep
        self._process = None  # the checks' child process, while it runs

    def _track(self, process) -> None:
        self._process = process

    def on_kill(self) -> None:
        """Stop the checks' child process (a timeout, a person marking the task failed); a
        sweep's spark-submit as the provider stops it."""
        from tidemark_airflow.quality_operator import stop_child

        if not stop_child(self._process) and self.sweep:
            super().on_kill()

    def execute(self, context: Any) -> dict:
        from airflow.sdk.exceptions import AirflowException

        from tidemark.family_quality_request import FamilyQualityRequest, FamilyQualityResult, MemberCheck
        from tidemark.quality_summary import quality_summary_builtins, read_quality_summary
        from tidemark.stream_config import read_streams_file
        from tidemark_airflow.quality_operator import run_logged

        started = time.monotonic()
        self.load_stream()
        self.apply_connections()  # the lake's and the family's Kafka settings, for the look and the checks
        declared = read_streams_file(self.conf_path)
        streams = [declared.streams[name] for name in self.members if name in declared.streams]
        hours = {name: list(asked) for name, asked in (self.hours or {}).items()}
        reports = reports_root()
        persisted, not_persisted = _split_by_events_table(streams)
        if self.sweep:
            due, unchanged = [stream.name for stream in persisted], []
        else:
            due, unchanged = self._look(persisted, reports, hours)
        passed_before = "" if self.sweep else f", {len(unchanged)} unchanged since a check that passed"
        self.log.info(
            "Family %s: %d of %d members to %s%s, %d not persisted yet; looked in %.1f s",
            self.family,
            len(due),
            len(streams),
            "sweep" if self.sweep else "check",
            passed_before,
            len(not_persisted),
            time.monotonic() - started,
        )
        if not_persisted:
            self.log.info(
                "Not persisted yet (no events table; their persist tick says why): %s", ", ".join(not_persisted)
            )
        if not due:
            return {"summaries": {}, "failed": [], "unchanged": unchanged, "not_persisted": not_persisted}
        run_name = re.sub(r"[^A-Za-z0-9_.:+-]", "_", f"{context['dag_run'].run_id}.{self.task_id}")
        request = FamilyQualityRequest(
            run_name,
            tuple(MemberCheck(name, tuple(sorted(set(hours.get(name, ()))))) for name in due),
            sweep=self.sweep,
        )
        with tempfile.TemporaryDirectory(prefix=f"tidemark-quality-{self.family}-") as folder:
            request_path = Path(folder) / "request.json"
            request_path.write_bytes(request.encode())
            arguments = [
                "--conf", self.conf_path,
                "--request", str(request_path),
                "--report-dir", str(reports),
                "--result-dir", folder,
            ]  # fmt: skip
            if self.sweep:  # Spark reads the lakes: spark-submit, as every Spark job goes
                self.submit(context, arguments)
            else:
                command = [sys.executable, self.application, *arguments]
                code, tail = run_logged(command, {**os.environ, **(self.env_vars or {})}, self.log, self._track)
                if code != 0:
                    raise AirflowException(
                        f"The quality checks of family {self.family} did not run (exit {code}):\n" + "\n".join(tail)
                    )
            result = FamilyQualityResult.decode((Path(folder) / "result.json").read_bytes())
            summaries = {
                outcome.stream: quality_summary_builtins(read_quality_summary(Path(folder) / outcome.result_file))
                for outcome in result.members
                if outcome.exit_code == 0
            }
        failed = [
            {"stream": outcome.stream, "error": outcome.error or f"exit {outcome.exit_code}"}
            for outcome in result.members
            if outcome.exit_code != 0
        ]
        for member in failed:
            self.log.error("Stream %s: the check failed: %s", member["stream"], member["error"])
        self.log.info(
            "Family %s: %d checked in one process in %.1f s, %d failed",
            self.family,
            len(summaries),
            result.seconds,
            len(failed),
        )
        return {"summaries": summaries, "failed": failed, "unchanged": unchanged, "not_persisted": not_persisted}

    def _look(self, streams: list, reports: Path, hours: dict[str, list[str]]) -> tuple[list[str], list[str]]:
        """The members whose answer could have changed (connectors.quality_look), and the rest."""
        from connectors.quality_look import members_to_check

        looked = members_to_check(streams, reports, hours)
        due = [name for name, (reason, _) in looked.items() if reason is not None]
        for name in due:
            self.log.info("Stream %s: checking: %s", name, looked[name][0])
        return due, [name for name in looked if name not in due]


def _split_by_events_table(streams: list) -> tuple[list, list[str]]:
    """The members with an events table, and the names of those without one yet."""
    from connectors.lake_storage import is_delta_table

    persisted = [stream for stream in streams if is_delta_table(stream.table_path("events"))]
    names = {stream.name for stream in persisted}
    return persisted, [stream.name for stream in streams if stream.name not in names]
