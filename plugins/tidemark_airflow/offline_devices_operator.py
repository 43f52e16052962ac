"""Run the offline-device detector (spark_jobs/offline_devices/job.py) of one stream through spark-submit."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from tidemark_airflow.spark_job_operator import TidemarkSparkJobOperator


class OfflineDevicesOperator(TidemarkSparkJobOperator):
    """Runs the detector for ``request`` (an OfflineDevicesRequest's JSON; templated, normally the
    validate task's output; None: live). Live continues from the stream's checkpoint up to the
    sealed horizon; a backfill reads [start, end) into its own table with a fresh checkpoint.

    Returns the job's summary (slices and records read, periods opened and closed, horizon). The
    task fails without retries when the stream has no ``offline_devices`` section or the job
    wrote no summary, and like any Spark job when spark-submit fails.
    """

    template_fields = (*TidemarkSparkJobOperator.template_fields, "request")

    def __init__(self, *, stream: str, conf_path: str, request: Any = None, **kwargs: Any) -> None:
        super().__init__(stream=stream, conf_path=conf_path, job="spark_jobs/offline_devices/job.py", **kwargs)
        self.request = request

    def execute(self, context: Any) -> Any:
        from airflow.sdk.exceptions import AirflowFailException

        from tidemark.event_time_text import format_event_time
        from tidemark.offline_devices_request import BACKFILL, OfflineDevicesRequest

        stream = self.load_stream()
        if stream.offline_devices is None:
            raise AirflowFailException(
                f"Stream {stream.name!r} has no offline_devices section in {self.conf_path}: add one to enable the detector."
            )
        request = OfflineDevicesRequest.from_json(self.request) if self.request else OfflineDevicesRequest("live")
        with tempfile.TemporaryDirectory(prefix=f"tidemark-offline-devices-{stream.name}-") as folder:
            result_path = Path(folder) / "result.json"
            arguments = ["--stream", stream.name, "--conf", self.conf_path, "--result", str(result_path)]
            if request.mode == BACKFILL:
                arguments += [
                    "--start",
                    format_event_time(request.start_ms),
                    "--end",
                    format_event_time(request.end_ms),
                ]
                if request.output:
                    arguments += ["--output", request.output]
            self.log.info("Offline devices of stream %s: %s run %s", stream.name, request.mode, " ".join(arguments))
            self.submit(context, arguments)
            if not result_path.exists():
                raise AirflowFailException(
                    f"the offline-device job succeeded but wrote no summary at {result_path}; its driver must run where "
                    "the task runs (spark-submit in client deploy mode)"
                )
            result = json.loads(result_path.read_text())
        self.log.info(
            "Stream %s: %s slices, %s records read up to %s (horizon %s); %s periods opened, %s closed; output %s",
            stream.name,
            result["slices"],
            result["records"],
            result["read_until"],
            result["horizon"],
            result["periods_opened"],
            result["periods_closed"],
            result["output"],
        )
        if result.get("cut_at_horizon"):
            self.log.warning(
                "The backfill stopped at the sealed horizon %s, before its end: run it again later.",
                result["read_until"],
            )
        return result
