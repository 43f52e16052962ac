"""Entry point of one driver of a stream family's maintenance tick (spark_jobs/family_driver.py):
the members' sealed hours compacted and tables vacuumed, one member after another, in one Spark
application, each as spark_jobs/maintenance/job.py maintains a stream.

    spark-submit spark_jobs/maintenance/family_job.py --conf conf/streams.yaml \\
        --stream shops_eu --stream shops_us --result-dir DIR

Each succeeded member's ``DIR/<member>.json`` is its MaintenanceResult (tidemark.maintenance_result).
"""

from __future__ import annotations

import sys
from pathlib import Path

# spark-submit runs this file as a script: the project's root goes first on the path.
sys.path[0] = str(Path(__file__).resolve().parents[2])

from spark_jobs.family_driver import drive  # noqa: E402
from spark_jobs.maintenance.job import maintain_named_stream  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    return drive(argv, "maintenance-family", lambda conf, name: maintain_named_stream(conf, name))


if __name__ == "__main__":
    sys.exit(main())
