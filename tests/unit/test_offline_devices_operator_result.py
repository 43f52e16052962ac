"""OfflineDevicesOperator reads the job's result file as its one type: a result it can read is
returned as the task's XCom; one it cannot fails the task naming the file and the field."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_spark_job_operator import CONN_ID, spark_submit, stream_conf  # noqa: F401 - fixtures

from tidemark.offline_devices_request import OfflineDevicesRequest
from tidemark.offline_devices_result import OfflineDevicesResult

RESULT = OfflineDevicesResult(
    stream="telemetry",
    mode="backfill",
    query_id="q",
    output="/lake/x",
    batches=3,
    slices=2,
    records=1200,
    periods_opened=3,
    periods_closed=2,
    read_until="2026-11-21T20:00:00.000Z",
    horizon="2026-11-21T22:00:00.000Z",
    watermark="2026-11-21T19:59:59.999Z",
)


def _job_writing(spark_submit, folder: Path, result: bytes) -> None:  # noqa: F811
    """spark-submit that writes ``result`` to the job's --result and exits 0."""
    spark_submit.install()
    written = folder / "written.json"
    written.write_bytes(result)
    script = folder / "bin" / "spark-submit"
    script.write_text(
        f"#!{sys.executable}\nimport shutil, sys\n"
        f"shutil.copy({str(written)!r}, sys.argv[sys.argv.index('--result') + 1])\n"
    )


def _operator(conf: Path):
    from tidemark_airflow.offline_devices_operator import OfflineDevicesOperator

    request = OfflineDevicesRequest("backfill", 1_795_269_600_000, 1_795_291_200_000, "/lake/x").to_json()
    return OfflineDevicesOperator(
        task_id="detect", stream="telemetry", conf_path=str(conf), request=request, conn_id=CONN_ID
    )


def test_the_result_the_job_wrote_is_the_task_s_value(spark_submit, stream_conf, tmp_path):  # noqa: F811
    _job_writing(spark_submit, tmp_path, RESULT.encode())

    assert _operator(stream_conf).execute({}) == RESULT.to_json()


def test_a_result_that_is_not_one_fails_the_task_naming_the_file_and_the_field(spark_submit, stream_conf, tmp_path):  # noqa: F811
    from airflow.sdk.exceptions import AirflowFailException

    # read_until as a number: what an older fake of this job wrote.
    _job_writing(spark_submit, tmp_path, RESULT.encode().replace(b'"2026-11-21T20:00:00.000Z"', b"1795291200000"))

    with pytest.raises(AirflowFailException) as raised:
        _operator(stream_conf).execute({})
    message = str(raised.value)
    assert message.startswith("the offline-device job succeeded but /")
    assert "result.json is not an offline-device detector result tidemark can read" in message
    assert "Expected `str | null`, got `int` - at `$.read_until`" in message
