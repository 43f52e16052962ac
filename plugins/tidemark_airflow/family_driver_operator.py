"""Submit one driver of a family's tick: several members run one after another in one Spark
application (spark_jobs/family_driver.py), and each member's own result read back."""

from __future__ import annotations

import tempfile
from abc import abstractmethod
from pathlib import Path
from typing import Any

from tidemark_airflow.spark_job_operator import TidemarkSparkJobOperator


class FamilyDriverOperator(TidemarkSparkJobOperator):
    """Runs ``job`` (a family driver) for each member in ``streams`` in one spark-submit (the
    family's members share their keys, so the first member's sizes the driver and names the
    connections). Each member that succeeded is handed to ``_succeeded`` with its own result's
    file. Returns the FamilyDriverResult of the members that failed (none: all succeeded) as JSON:
    the task succeeds whenever the driver ran, and the family's verdict task fails for those
    members. A driver that did not run (spark-submit failed) fails the task."""

    template_fields = (*TidemarkSparkJobOperator.template_fields, "streams")

    def __init__(self, *, streams: list[str], conf_path: str, job: str, **kwargs: Any) -> None:
        if not streams:
            raise ValueError("a family's driver needs at least one member")
        super().__init__(stream=streams[0], conf_path=conf_path, job=job, **kwargs)
        self.streams = list(streams)

    def execute(self, context: Any) -> Any:
        from tidemark.family_driver_result import FamilyDriverResult, MemberOutcome
        from tidemark.stream_config import load_streams

        self.load_stream()
        self._before(context)
        streams = load_streams(self.conf_path)
        with tempfile.TemporaryDirectory(prefix="tidemark-family-driver-") as folder:
            arguments = ["--conf", self.conf_path, "--result-dir", folder]
            for name in self.streams:
                arguments += ["--stream", name]
            self.submit(context, arguments)
            result = FamilyDriverResult.decode((Path(folder) / "result.json").read_bytes())
            failed = list(result.failed())
            for outcome in result.members:
                if outcome.exit_code != 0:
                    self.log.error(
                        "Stream %s: failed (exit %d) in %.1f s: %s",
                        outcome.stream,
                        outcome.exit_code,
                        outcome.seconds,
                        outcome.error,
                    )
                    continue
                problem = self._succeeded(
                    outcome, Path(folder) / outcome.summary_file, streams[outcome.stream], context
                )
                if problem is not None:
                    failed.append(MemberOutcome(outcome.stream, 1, outcome.seconds, error=problem))
        self.log.info("%d members in one driver in %.1f s, %d failed", len(result.members), result.seconds, len(failed))
        return FamilyDriverResult(tuple(failed), result.seconds).to_json()

    def _before(self, context: Any) -> None:
        """Checks before the driver is submitted (raise to fail the task)."""

    @abstractmethod
    def _succeeded(self, outcome, path: Path, stream, context: Any) -> str | None:
        """A member's own result at ``path``, read and acted on; a reason when it cannot be
        trusted (the member then counts as failed), else None."""
