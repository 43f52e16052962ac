"""Entry point of the offline-device detector: a replayable stateful job over a stream's sealed events.

    spark-submit spark_jobs/offline_devices/job.py --stream telemetry [--conf conf/streams.yaml]
        [--start 2026-11-21T14:00:00Z --end 2026-11-21T20:00:00Z [--output PATH]]
        [--slice 15m] [--trigger available_now|continuous] [--result PATH]

A device is offline once ``offline_after`` (conf: ``offline_devices``) has passed since its last
record, online again at its next record (tidemark.offline_detection). The output is a Delta table
of (device_id, offline_at, online_at), keyed (device_id, offline_at): a period is written when it
begins (online_at null) and updated when the device comes back, so the table always shows the
devices offline now; a replayed batch changes nothing (MERGE on the key, online_at set once).

How it stays replayable. It reads the stream's lake, not Kafka: only sealed hours, in event-time
slices (spark_jobs.offline_devices.sealed_events_source), so every slice it reads is final, whatever the speed at
which each Kafka partition was persisted. Its watermark (withWatermark, delay 0) is the end of the
last slice read, and never runs ahead of tidemark's G: slice ends are <= the sealed horizon (end of
the last sealed hour) <= G - allowed_lateness. Delay 0 is enough because batches are disjoint,
ordered slices: every row of a batch is at or after the previous slice's end, hence after the
watermark, so nothing is ever dropped as late and nothing is held back. The processor
(spark_jobs.offline_devices.processor) buffers records until the watermark passes them and then
handles records and deadlines in event-time order: the output depends on the records and the
horizon only, not on slice length or on how many records a batch holds.

Without --start/--end: live. Checkpoint ``<checkpoint_root>/<stream>/offline_devices``, output the
stream's ``offline_devices`` table; a first run starts at the first sealed event hour, later runs
continue from the checkpoint. available_now reads up to the horizon seen when the run starts and
stops (the DAG runs it per sealed hour); continuous re-reads the horizon every trigger.

With --start/--end: a backfill of [start, end) into --output (default: the stream's
``offline_devices_backfill/<start>_<end>`` table), with a fresh checkpoint. It reads from
start - offline_after (a warm-up that sets each device's state) and reports no period that went
offline before start, so it reports what the live detector reports for the range. It never reads
past the sealed horizon: an end beyond it is cut there (the result says so).

Exit status: 0 done, 2 bad arguments or configuration (the message names the problem), 1 a
failure while running.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import msgspec

# spark-submit runs this file as a script: the project's root, not this file's folder, goes first
# on the path (the folder's modules would shadow top-level ones), so it imports when not installed.
sys.path[0] = str(Path(__file__).resolve().parents[2])

from tidemark.duration import parse_duration_ms  # noqa: E402
from tidemark.event_time_text import format_optional_event_time  # noqa: E402
from tidemark.offline_devices_request import (  # noqa: E402
    BACKFILL,
    LIVE,
    OfflineDevicesRequest,
    OfflineDevicesRequestError,
    backfill_table,
    parse_offline_devices_request,
)
from tidemark.offline_devices_result import OfflineDevicesResult  # noqa: E402
from tidemark.stream_config import StreamConfig, StreamConfigError, load_stream  # noqa: E402

log = logging.getLogger("tidemark.offline_devices")

TRIGGERS = ("available_now", "continuous")
# Settings the query runs with, set on the session for the query's life and put back after it, so
# that a session shared with other work is left as it was (the query's thread copies the session
# when it starts running, not when start() returns: they cannot be put back earlier).
# transformWithState keeps its state in RocksDB only: Spark refuses the default HDFS-backed store.
_QUERY_SETTINGS = {
    "spark.sql.streaming.stateStore.providerClass": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}


@dataclass(frozen=True)
class OfflineDevicesRun:
    """One run of the detector.

    ``read_from_ms`` is where a run without a checkpoint starts reading (None: the first sealed
    event hour), ``read_until_ms`` where it stops (None: the sealed horizon), ``report_from_ms``
    the first offline_at it reports (a backfill's start; None: all). ``slice_ms`` is the event
    time per micro-batch. All ms since the epoch, UTC.
    """

    mode: str
    checkpoint: str
    output: str
    slice_ms: int
    trigger: str = "available_now"
    read_from_ms: int | None = None
    read_until_ms: int | None = None
    report_from_ms: int | None = None

    def __post_init__(self):
        if self.mode not in (LIVE, BACKFILL):
            raise ValueError(f"mode must be {LIVE} or {BACKFILL}, got {self.mode!r}")
        if self.trigger not in TRIGGERS:
            raise ValueError(f"trigger must be one of {TRIGGERS}, got {self.trigger!r}")
        if self.mode == BACKFILL and (
            self.read_from_ms is None or self.read_until_ms is None or self.trigger != "available_now"
        ):
            raise ValueError(
                "a backfill reads a bounded range [read_from_ms, read_until_ms) with trigger available_now"
            )

    @classmethod
    def live(
        cls, stream: StreamConfig, slice_ms: int | None = None, trigger: str = "available_now"
    ) -> OfflineDevicesRun:
        settings = _settings(stream)
        return cls(
            LIVE,
            stream.checkpoint_path("offline_devices"),
            stream.table_path("offline_devices"),
            slice_ms or settings.live_slice_ms,
            trigger,
        )

    @classmethod
    def backfill(
        cls, stream: StreamConfig, start_ms: int, end_ms: int, output: str, checkpoint: str, slice_ms: int | None = None
    ) -> OfflineDevicesRun:
        settings = _settings(stream)
        return cls(
            BACKFILL,
            checkpoint,
            output,
            slice_ms or settings.backfill_slice_ms,
            "available_now",
            read_from_ms=start_ms - settings.offline_after_ms,
            read_until_ms=end_ms,
            report_from_ms=start_ms,
        )


def _settings(stream: StreamConfig):
    if stream.offline_devices is None:
        raise StreamConfigError(
            f"stream {stream.name!r} has no offline_devices section in its configuration: the detector is not enabled for it"
        )
    return stream.offline_devices


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="offline_devices", description="Detect offline devices in a stream's sealed events."
    )
    parser.add_argument("--stream", required=True, help="stream name in the configuration")
    parser.add_argument(
        "--conf", default=os.environ.get("TIDEMARK_CONF", "conf/streams.yaml"), help="streams.yaml path"
    )
    parser.add_argument("--start", help="backfill from this event time (ISO-8601 UTC, e.g. 2026-11-21T14:00:00Z)")
    parser.add_argument("--end", help="backfill up to this event time (exclusive)")
    parser.add_argument(
        "--output", help="the backfill's output table (default: the stream's offline_devices_backfill/<start>_<end>)"
    )
    parser.add_argument(
        "--slice", help="event time per micro-batch, e.g. 15m or 6h (default: the stream's live_slice / backfill_slice)"
    )
    parser.add_argument(
        "--trigger", choices=TRIGGERS, default="available_now", help="live runs only (default available_now)"
    )
    parser.add_argument(
        "--result", type=Path, help="write the run's result (tidemark.offline_devices_result) as JSON here"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from spark_jobs.json_log import configure_json_logging

    configure_json_logging()
    args = parse_args(argv)
    try:
        stream = load_stream(args.conf, args.stream)
        request = parse_offline_devices_request({"start": args.start, "end": args.end, "output": args.output})
        slice_ms = _slice(args.slice)
        if request.mode == BACKFILL and args.trigger != "available_now":
            raise OfflineDevicesRequestError("trigger", "a backfill runs available_now: it ends at its end time")
        _settings(stream)
    except (StreamConfigError, OfflineDevicesRequestError, ValueError) as error:
        print(f"offline_devices: {error}", file=sys.stderr)
        return 2

    from connectors.spark_session import lake_spark_session

    spark = lake_spark_session(f"tidemark-offline-devices-{stream.name}")
    result = run_request(spark, stream, request, slice_ms, args.trigger)
    if args.result:
        result.write(args.result)
    return 0


def _slice(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        slice_ms = parse_duration_ms(text)
    except ValueError as error:
        raise OfflineDevicesRequestError("slice", str(error)) from None
    if slice_ms < 1000:
        raise OfflineDevicesRequestError("slice", f"{text!r} is shorter than a second")
    return slice_ms


def run_request(
    spark,
    stream: StreamConfig,
    request: OfflineDevicesRequest,
    slice_ms: int | None = None,
    trigger: str = "available_now",
) -> OfflineDevicesResult:
    """Run ``request`` on ``spark``: live from the stream's checkpoint, or a backfill with a fresh
    checkpoint (removed after a successful run when it is a local folder)."""
    if request.mode == LIVE:
        return run_offline_devices(spark, stream, OfflineDevicesRun.live(stream, slice_ms, trigger))
    import shutil
    import uuid

    output = request.output or stream.table_path(backfill_table(request.start_ms, request.end_ms))
    checkpoint = f"{stream.checkpoint_path('offline_devices_backfill')}/{uuid.uuid4().hex}"
    run = OfflineDevicesRun.backfill(stream, request.start_ms, request.end_ms, output, checkpoint, slice_ms)
    result = run_offline_devices(spark, stream, run)
    if "://" not in checkpoint or checkpoint.startswith("file://"):
        shutil.rmtree(checkpoint.removeprefix("file://"), ignore_errors=True)
    return result


def run_offline_devices(spark, stream: StreamConfig, run: OfflineDevicesRun) -> OfflineDevicesResult:
    """Run the detector on ``spark`` until the run ends (available_now) or is stopped
    (continuous); returns its result: slices, records, periods opened and closed, horizon."""
    from spark_jobs.offline_devices.erasure_rebuild import forget_erased
    from spark_jobs.offline_devices.periods_table import OfflinePeriodsWriter
    from spark_jobs.slice_progress import SliceProgress

    writer = OfflinePeriodsWriter(spark, run.output)
    writer.ensure_table()
    rebuilt = run.mode == LIVE and forget_erased(spark, stream, run.checkpoint, run.output)
    query_name = f"tidemark_offline_devices_{run.mode}_{stream.name}"
    stream_writer = _periods_query(spark, stream, run, writer, query_name)
    progress = SliceProgress(stream.name, run.mode, query_name)
    spark.streams.addListener(progress)
    previous = {key: spark.conf.get(key, None) for key in _QUERY_SETTINGS}
    for key, value in _QUERY_SETTINGS.items():
        spark.conf.set(key, value)
    try:
        query = stream_writer.start()
        log.info(
            {
                "event": "query_started",
                "stream": stream.name,
                "mode": run.mode,
                "trigger": run.trigger,
                "query_id": query.id,
                "output": run.output,
                "slice": run.slice_ms,
                "read_from": format_optional_event_time(run.read_from_ms),
                "read_until": format_optional_event_time(run.read_until_ms),
                "report_from": format_optional_event_time(run.report_from_ms),
            }
        )
        query.awaitTermination()
        progress.wait_for(query)
    finally:
        spark.streams.removeListener(progress)
        _restore(spark, previous)
    result = msgspec.structs.replace(_result(stream, run, query, progress, writer), rebuilt_after_erasure=rebuilt)
    log.info({"event": "query_finished", **result.to_json()})
    return result


def _periods_query(spark, stream: StreamConfig, run: OfflineDevicesRun, writer, query_name: str):
    """The query's writer, not started: the sealed events, sliced, through the per-device
    state machine (OfflineDeviceProcessor), into the periods table."""
    from spark_jobs.offline_devices.processor import OUTPUT_SCHEMA, OfflineDeviceProcessor
    from spark_jobs.offline_devices.sealed_events_source import SealedEventsOptions, SealedEventsSource

    settings = _settings(stream)
    spark.dataSource.register(SealedEventsSource)
    options = SealedEventsOptions(
        events_path=stream.table_path("events"),
        seals_path=stream.table_path("seals"),
        device_field=settings.device_field,
        slice_ms=run.slice_ms,
        start_ms=run.read_from_ms,
        end_ms=run.read_until_ms,
    )
    periods = (
        spark.readStream.format(SealedEventsSource.name())
        .options(**options.to_options())
        .load()
        .withWatermark("event_time", "0 seconds")
        .groupBy("device_id")
        .transformWithStateInPandas(
            OfflineDeviceProcessor(settings.offline_after_ms, run.report_from_ms),
            outputStructType=OUTPUT_SCHEMA,
            outputMode="Append",
            timeMode="EventTime",
        )
    )
    stream_writer = (
        periods.writeStream.queryName(query_name).foreachBatch(writer).option("checkpointLocation", run.checkpoint)
    )
    if run.trigger == "available_now":
        return stream_writer.trigger(availableNow=True)
    return stream_writer.trigger(processingTime=f"{stream.persist.trigger_interval_ms} milliseconds")


def _result(stream: StreamConfig, run: OfflineDevicesRun, query, progress, writer) -> OfflineDevicesResult:
    """What the run did, from its own slices and commits; a backfill cut at the sealed horizon
    says so."""
    read_until, horizon = progress.read_until_ms, progress.horizon_ms
    if read_until is None and run.mode == LIVE:
        # This run read no slice (no hour sealed since the last): say where the detector stands
        # and the horizon it met, as the operator's look does when it skips a run -- not None.
        from connectors.offline_devices_horizon import look_before_detecting

        look = look_before_detecting(stream)
        read_until, horizon = look.read_until_ms, look.sealed_horizon_ms
    cut_at_horizon = run.mode == BACKFILL and (read_until or 0) < run.read_until_ms
    if cut_at_horizon:
        log.warning(
            {
                "event": "backfill_cut_at_horizon",
                "stream": stream.name,
                "end": format_optional_event_time(run.read_until_ms),
                "read_until": format_optional_event_time(read_until),
                "detail": "only sealed hours are read: the backfill stopped at the sealed horizon; run it again "
                "once the persist job has sealed the rest",
            }
        )
    return OfflineDevicesResult(
        stream=stream.name,
        mode=run.mode,
        query_id=str(query.id),
        output=run.output,
        batches=progress.batches,
        slices=progress.slices,
        records=progress.records,
        periods_opened=writer.opened,
        periods_closed=writer.closed,
        read_until=format_optional_event_time(read_until),
        horizon=format_optional_event_time(horizon),
        watermark=format_optional_event_time(None if read_until is None else read_until - 1),
        cut_at_horizon=cut_at_horizon,
    )


def _restore(spark, settings: dict[str, str | None]) -> None:
    for key, value in settings.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


if __name__ == "__main__":
    sys.exit(main())
