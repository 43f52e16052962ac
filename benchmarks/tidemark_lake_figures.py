"""What a persist run left in its lake, for the side-by-side benchmark: ledger rows and late records.

    TIDEMARK_JARS=... .venv/bin/python benchmarks/tidemark_lake_figures.py --lake ROOT [--stream telemetry]

Prints one JSON object on stdout:

    ledger   one entry per ledger row: step_id, source_partition, records, quarantined, late,
             min/max event time (ms since the epoch, UTC), partition_watermark_ms,
             partition_status, slicing (columns the ledger does not have yet are left out)
    late_per_partition   rows of the late table per source partition ({} when there is no table)

Run as its own process after the persist job has stopped, so it never overlaps a Spark job and
its JVM is not counted in the job's memory.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

_TIME_COLUMNS = ("min_event_time", "max_event_time", "partition_watermark")
_PLAIN_COLUMNS = ("step_id", "source_partition", "records", "quarantined", "late", "partition_status", "slicing")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lake", required=True, help="the run's lake root")
    parser.add_argument("--stream", default="telemetry")
    args = parser.parse_args()

    from pyspark.sql import functions as F

    from connectors.spark_session import lake_spark_session

    spark = lake_spark_session("bench-lake-figures", {"spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    root = f"{args.lake.rstrip('/')}/{args.stream}"

    ledger = spark.read.format("delta").load(f"{root}/ledger")
    present = set(ledger.columns)
    # Epoch ms rather than TIMESTAMP: a collected TIMESTAMP is a naive datetime in the local zone.
    columns = [F.col(name) for name in _PLAIN_COLUMNS if name in present] + [
        F.unix_millis(name).alias(f"{name}_ms") for name in _TIME_COLUMNS if name in present
    ]
    rows = [row.asDict() for row in ledger.select(*columns).orderBy("step_id", "source_partition").collect()]

    late_per_partition = {}
    from connectors.lake_storage import is_delta_table

    if is_delta_table(f"{root}/late"):  # a first commit, not a folder (issue 36)
        late = spark.read.format("delta").load(f"{root}/late")
        late_per_partition = {
            str(row.source_partition): row["count"] for row in late.groupBy("source_partition").count().collect()
        }
    print(json.dumps({"ledger": rows, "late_per_partition": late_per_partition}))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
