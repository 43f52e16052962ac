"""Entry point of one driver of a stream family's persist tick (spark_jobs/family_driver.py): the
members' topics into their own Delta tables, one after another, in one Spark application, each as
spark_jobs/persist/job.py persists a stream.

    spark-submit spark_jobs/persist/family_job.py --conf conf/streams.yaml \\
        --stream shops_eu --stream shops_us --result-dir DIR

Each succeeded member's ``DIR/<member>.json`` is its run summary (tidemark.persist_run_summary).
"""

from __future__ import annotations

import sys
from pathlib import Path

# spark-submit runs this file as a script: the project's root goes first on the path (see job.py).
sys.path[0] = str(Path(__file__).resolve().parents[2])

from spark_jobs.family_driver import drive  # noqa: E402
from spark_jobs.persist.job import persist_named_stream  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    return drive(argv, "persist-family", lambda conf, name: persist_named_stream(conf, name))


if __name__ == "__main__":
    sys.exit(main())
