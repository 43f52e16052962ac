"""One driver of a family's maintenance tick (spark_jobs/maintenance/family_job.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tidemark_airflow.family_driver_operator import FamilyDriverOperator


class FamilyMaintenanceOperator(FamilyDriverOperator):
    """Maintains each member in ``streams`` in one driver and logs each member's summary (its
    MaintenanceResult: hours compacted, files each commit rewrote, files VACUUM deleted)."""

    def __init__(self, *, streams: list[str], conf_path: str, **kwargs: Any) -> None:
        super().__init__(streams=streams, conf_path=conf_path, job="spark_jobs/maintenance/family_job.py", **kwargs)

    def _succeeded(self, outcome, path: Path, stream, context: Any) -> str | None:
        import msgspec

        from tidemark.maintenance_result import MaintenanceResult

        try:
            result = MaintenanceResult.decode(path.read_bytes())
        except (OSError, msgspec.DecodeError, msgspec.ValidationError) as error:
            return f"its maintenance result could not be read ({error})"
        self.log.info("Maintenance of %s", result.summary())
        return None
