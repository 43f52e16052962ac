"""The live detector forgets erased records: it is rebuilt from the lake as it is now.

An erasure (spark_jobs/erasure/job.py) removes records from the sealed events the detector read.
Its periods table and its state store (the last record of each device, the open periods) still
hold what those records said. The detector is replayable (its output depends on the sealed
records only), so a live run that finds erasures its table was not built from
(tidemark.offline_devices_progress.erasures_to_forget) starts over: its checkpoint goes, its
periods table is emptied, and the run reads every sealed hour again. The table then says which
erasures version it was built from (a table property), so it happens once per erasure.

Crash-safe in this order: the checkpoint, then the rows, then the property. A run that dies half
way finds the property still behind and does it all again.
"""

from __future__ import annotations

import logging

from tidemark.offline_devices_progress import ERASURES_BUILT_FROM, erasures_to_forget
from tidemark.stream_config import StreamConfig

log = logging.getLogger("tidemark.offline_devices")


def forget_erased(spark, stream: StreamConfig, checkpoint: str, output: str) -> bool:
    """Rebuild the live detector (its ``checkpoint`` and its periods table ``output``) when the
    stream has erasures it was not built from; True when it did."""
    from connectors.offline_devices_horizon import erasure_versions
    from spark_jobs.streaming_checkpoint import hadoop_file_system

    version, built_from = erasure_versions(stream)
    if not erasures_to_forget(version, built_from):
        return False
    path, fs = hadoop_file_system(spark, checkpoint)
    fs.delete(path, True)
    spark.sql(f"DELETE FROM delta.`{output}`")
    spark.sql(f"ALTER TABLE delta.`{output}` SET TBLPROPERTIES ('{ERASURES_BUILT_FROM}' = '{version}')")
    log.warning(
        {
            "event": "detector_rebuilt",
            "stream": stream.name,
            "erasures_version": version,
            "detail": "records were erased since the detector last ran: its periods and state start over from "
            "the sealed events as they are now",
        }
    )
    return True
