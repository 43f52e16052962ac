"""Run the maintenance job (spark_jobs/maintenance/job.py) for one stream."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from tidemark_airflow.spark_job_operator import TidemarkSparkJobOperator


class MaintenanceOperator(TidemarkSparkJobOperator):
    """Compacts ``stream``'s sealed hours and vacuums its tables; returns the job's
    MaintenanceResult as its JSON (the hours compacted and the files each commit rewrote, the
    files VACUUM deleted per table: the commits' own metrics), and logs its one-line summary."""

    def __init__(self, *, stream: str, conf_path: str, **kwargs: Any) -> None:
        super().__init__(stream=stream, conf_path=conf_path, job="spark_jobs/maintenance/job.py", **kwargs)

    def execute(self, context: Any) -> Any:
        from tidemark.maintenance_result import MaintenanceResult

        stream = self.load_stream()
        idle = self.skip_if_nothing_to_do(stream)
        if idle is not None:
            self.log.info("Maintenance of %s", idle.summary())
            return idle.to_json()
        with tempfile.TemporaryDirectory(prefix=f"tidemark-maintenance-{stream.name}-") as folder:
            result_path = Path(folder) / "result.json"
            self.submit(context, ["--stream", stream.name, "--conf", self.conf_path, "--result", str(result_path)])
            result = MaintenanceResult.decode(result_path.read_bytes())
        self.log.info("Maintenance of %s", result.summary())
        return result.to_json()

    def skip_if_nothing_to_do(self, stream):
        """The result of a run with nothing to do, decided without Spark
        (connectors.maintenance_look); None when the job must run (the reason is logged)."""
        from connectors.maintenance_look import look_before_maintaining
        from tidemark.maintenance_result import MaintenanceResult

        started = time.monotonic()
        if not self.connections_applied_for_a_look(stream):
            return None
        look = look_before_maintaining(stream)
        seconds = round(time.monotonic() - started, 2)
        if not look.nothing_to_do:
            self.log.info("Stream %s: %s: running the job (looked in %.1f s)", stream.name, look.reason, seconds)
            return None
        return MaintenanceResult(stream.name, seconds=seconds, nothing_to_do=look.reason)
