"""Run the maintenance job (spark_jobs/maintenance/job.py) for one stream."""

from __future__ import annotations

import tempfile
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
        with tempfile.TemporaryDirectory(prefix=f"tidemark-maintenance-{stream.name}-") as folder:
            result_path = Path(folder) / "result.json"
            self.submit(context, ["--stream", stream.name, "--conf", self.conf_path, "--result", str(result_path)])
            result = MaintenanceResult.decode(result_path.read_bytes())
        self.log.info("Maintenance of %s", result.summary())
        return result.to_json()
