"""Offline-device DAGs: one per stream with an ``offline_devices`` section in conf/streams.yaml,
named tidemark_offline_devices__<stream>.

Live on the stream's sealed hours: each persist run that seals hours triggers a run, which reads
the newly sealed slices from the detector's checkpoint. A person triggers a backfill through the
params form (start, end, output). Wiring only: parsing reads the configuration file.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pendulum
from airflow.sdk import Param, dag, task

from tidemark.stream_config import StreamConfig, load_streams
from tidemark_airflow.offline_devices_operator import OfflineDevicesOperator
from tidemark_airflow.reader_timeout import reader_timeout
from tidemark_airflow.sealed_hour_assets import sealed_hours_asset

CONF_PATH = os.environ.get("TIDEMARK_CONF", str(Path(__file__).resolve().parents[1] / "conf" / "streams.yaml"))


def offline_devices_dag(stream: StreamConfig):
    settings = stream.offline_devices

    @dag(
        dag_id=f"tidemark_offline_devices__{stream.name}",
        schedule=sealed_hours_asset(stream.name),
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        # Live runs share one checkpoint: never two at once (a backfill waits its turn too).
        max_active_runs=1,
        tags=["tidemark", "offline_devices", stream.name],
        # Loose schemas on purpose: the validate task checks every param and names the wrong one.
        params={
            "start": Param(
                "",
                type=["null", "string"],
                description="backfill from (ISO-8601 UTC, e.g. 2026-11-21T14:00:00Z); empty: live",
            ),
            "end": Param("", type=["null", "string"], description="backfill up to (exclusive); empty: live"),
            "output": Param(
                "",
                type=["null", "string"],
                description=f"backfill output table; empty: {stream.lake.root}/{stream.name}/offline_devices_backfill/<start>_<end>",
            ),
        },
        doc_md=f"""
### Offline devices of `{stream.name}`
A device (`{settings.device_field}`) with no record for {settings.offline_after_ms // 60_000} minutes is offline
from then until its next record. Output: the Delta table `{stream.lake.root}/{stream.name}/offline_devices`
of (device_id, offline_at, online_at); online_at is empty while the device is still offline.

**Live** (runs on every event of `{sealed_hours_asset(stream.name).name}`): reads the newly sealed hours of
`events` in {settings.live_slice_ms // 60_000}-minute event-time slices from its checkpoint. It reads only
sealed hours, so its watermark never passes tidemark's global watermark and the result does not depend on
how fast each Kafka partition was read.

**Backfill** (trigger with params `start` and `end`): the same detector over [start, end) in
{settings.backfill_slice_ms // 3_600_000}-hour slices into its own table, with a warm-up of
{settings.offline_after_ms // 60_000} minutes before start; it reports exactly what live reports for the range.
""",
    )
    def offline_devices():
        @task
        def validate(params=None) -> dict:
            """Every param checked before any work; the error names the param."""
            from airflow.sdk.exceptions import AirflowFailException

            from tidemark.offline_devices_request import OfflineDevicesRequestError, parse_offline_devices_request

            try:
                request = parse_offline_devices_request(
                    {name: (params or {}).get(name) for name in ("start", "end", "output")}
                )
            except OfflineDevicesRequestError as error:
                raise AirflowFailException(str(error)) from None
            return request.to_json()

        OfflineDevicesOperator(
            execution_timeout=reader_timeout(stream),
            task_id="detect",
            stream=stream.name,
            conf_path=CONF_PATH,
            request=validate(),
            conn_id=stream.persist.spark_conn_id,
            retries=2,
            retry_delay=timedelta(minutes=1),
        )

    return offline_devices()


for _stream in load_streams(CONF_PATH).values():
    if _stream.offline_devices is not None:
        globals()[f"tidemark_offline_devices__{_stream.name}"] = offline_devices_dag(_stream)
