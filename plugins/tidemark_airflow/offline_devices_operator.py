"""Run the offline-device detector (spark_jobs/offline_devices/job.py) of one stream through spark-submit."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from tidemark_airflow.spark_job_operator import TidemarkSparkJobOperator


class OfflineDevicesOperator(TidemarkSparkJobOperator):
    """Runs the detector for ``request`` (an OfflineDevicesRequest's JSON; templated, normally the
    validate task's output; None: live). Live continues from the stream's checkpoint up to the
    sealed horizon; a backfill reads [start, end) into its own table with a fresh checkpoint.

    Returns the job's result (tidemark.offline_devices_result.OfflineDevicesResult's JSON: slices
    and records read, periods opened and closed, how far it read, the horizon). The task fails
    without retries when the stream has no ``offline_devices`` section or the job wrote no result
    or one that is not an OfflineDevicesResult (the message names the file and the field), and
    like any Spark job when spark-submit fails.

    ``skip_when_nothing_new`` (default True): before a live run, look without Spark
    (connectors.offline_devices_horizon: the seals table and the live checkpoint's last batch) and,
    when the detector has already read the sealed horizon and fired its timers, start no Spark job:
    one log line says what was compared and how long the look took, and the task returns an
    OfflineDevicesResult with zero batches, slices, records and periods (``query_id`` None,
    ``read_until`` and ``horizon`` as the look found them). A look that cannot read the seals table
    or the checkpoint, or finds anything to do, runs the job as before and says why in one line.
    Backfills always run the job. False: every run submits the job (e.g. to benchmark the look).
    """

    template_fields = (*TidemarkSparkJobOperator.template_fields, "request")

    def __init__(
        self,
        *,
        stream: str,
        conf_path: str,
        request: Any = None,
        skip_when_nothing_new: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(stream=stream, conf_path=conf_path, job="spark_jobs/offline_devices/job.py", **kwargs)
        self.request = request
        self.skip_when_nothing_new = skip_when_nothing_new

    def execute(self, context: Any) -> Any:
        from airflow.sdk.exceptions import AirflowFailException

        from tidemark.event_time_text import format_event_time
        from tidemark.offline_devices_request import BACKFILL, OfflineDevicesRequest
        from tidemark.offline_devices_result import OfflineDevicesResult, OfflineDevicesResultError

        stream = self.load_stream()
        if stream.offline_devices is None:
            raise AirflowFailException(
                f"Stream {stream.name!r} has no offline_devices section in {self.conf_path}: add one to enable the detector."
            )
        request = OfflineDevicesRequest.from_json(self.request) if self.request else OfflineDevicesRequest("live")
        if request.mode != BACKFILL and self.skip_when_nothing_new:
            skipped = self.skip_if_nothing_new(stream)
            if skipped is not None:
                return skipped
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
            try:
                result = OfflineDevicesResult.read(result_path)
            except OfflineDevicesResultError as error:
                raise AirflowFailException(f"the offline-device job succeeded but {error}") from None
        self.log.info("Stream %s: %s", stream.name, result.describe())
        if result.cut_at_horizon:
            self.log.warning(
                "The backfill stopped at the sealed horizon %s, before its end: run it again later.",
                result.read_until or "(nothing sealed in its range)",
            )
        return result.to_json()

    def skip_if_nothing_new(self, stream) -> dict | None:
        """The summary of a live run that has nothing to do, decided without Spark; None when the
        job must run (the reason is logged). One log line either way."""
        from connectors.offline_devices_horizon import look_before_detecting
        from tidemark.event_time_text import format_optional_event_time
        from tidemark.offline_devices_request import LIVE
        from tidemark.offline_devices_result import OfflineDevicesResult

        started = time.monotonic()
        if not self.connections_applied_for_a_look(stream):
            return None
        look = look_before_detecting(stream)
        seconds = time.monotonic() - started
        if not look.nothing_new:
            self.log.info("Stream %s: %s: running the job (looked in %.1f s)", stream.name, look.reason, seconds)
            return None
        self.log.info("Stream %s: %s; no Spark job started (%.1f s)", stream.name, look.reason, seconds)
        return OfflineDevicesResult(
            stream=stream.name,
            mode=LIVE,
            query_id=None,
            output=stream.table_path("offline_devices"),
            batches=0,
            slices=0,
            records=0,
            periods_opened=0,
            periods_closed=0,
            read_until=format_optional_event_time(look.read_until_ms),
            horizon=format_optional_event_time(look.sealed_horizon_ms),
            watermark=format_optional_event_time(None if look.read_until_ms is None else look.read_until_ms - 1),
        ).to_json()
