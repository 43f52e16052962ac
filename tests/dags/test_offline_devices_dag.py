"""`airflow dags test` on the offline-devices DAG and its operator: bad params fail before anything
is submitted, naming the param; a backfill request becomes the job's arguments; a job that writes
no summary fails the task. The job itself runs against the real broker and lake in
tests/integration/test_offline_devices_determinism.py; spark-submit through the provider's
connection is run end to end by the persist, quality, recover and backfill DAG tests, which share
the operator base class."""

from __future__ import annotations

import json

from pathlib import Path

import pytest

from harness.airflow_process import dags_test
from harness.persist_job import write_stream_config

REPO = Path(__file__).resolve().parents[2]
DAG_ID = "tidemark_offline_devices__telemetry"

# The operator with spark-submit replaced: the fake job writes the summary the real one writes (or
# none), at the path the operator passed it.
FAKE_JOB_DAGS = '''
import json

import pendulum
from airflow.sdk import dag

from tidemark_airflow.offline_devices_operator import OfflineDevicesOperator


class FakeJobOfflineDevicesOperator(OfflineDevicesOperator):
    def __init__(self, *, writes_summary, **kwargs):
        super().__init__(**kwargs)
        self.writes_summary = writes_summary

    def submit_job(self, context):
        args = self.application_args
        if self.writes_summary:
            with open(args[args.index("--result") + 1], "w") as summary_file:
                json.dump({{"slices": 2, "records": 1200, "read_until": "2026-11-21T20:00:00.000Z",
                           "horizon": "2026-11-21T22:00:00.000Z", "periods_opened": 3, "periods_closed": 2,
                           "output": "/lake/x"}}, summary_file)


def fake_dag(dag_id, request, writes_summary):
    @dag(dag_id=dag_id, schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False)
    def fake():
        FakeJobOfflineDevicesOperator(
            task_id="detect", stream="telemetry", conf_path={conf_path!r}, request=request, writes_summary=writes_summary
        )

    return fake()


backfill = fake_dag(
    "fake_offline_devices__backfill",
    {{"mode": "backfill", "start_ms": 1795269600000, "end_ms": 1795291200000, "output": "/lake/x"}},
    True,
)
no_summary = fake_dag("fake_offline_devices__no_summary", None, False)
'''


@pytest.fixture(scope="module")
def fake_dags_environment(airflow_environment, tmp_path_factory) -> dict[str, str]:
    dags = tmp_path_factory.mktemp("fake-offline-devices-dags")
    (dags / "fake_offline_devices.py").write_text(FAKE_JOB_DAGS.format(conf_path=str(REPO / "conf" / "streams.yaml")))
    return {**airflow_environment, "AIRFLOW__CORE__DAGS_FOLDER": str(dags)}


def test_bad_params_fail_before_any_work_naming_the_param(airflow_environment, tmp_path):
    conf = write_stream_config(tmp_path, "127.0.0.1:9", "unused", 4)
    environment = {**airflow_environment, "TIDEMARK_CONF": str(conf)}
    # Every param's rule is unit-tested (tests/unit/test_offline_devices_request.py).
    cases = {"start": {"start": "21 Nov 14:00", "end": "2026-11-21T20:00:00Z"}}
    for param, params in cases.items():
        result = dags_test(environment, DAG_ID, "--conf", json.dumps(params))
        output = result.stdout + result.stderr
        assert result.returncode != 0
        assert f"param '{param}'" in output, output[-3000:]
        assert "spark-submit" not in output, "nothing may be submitted before the params are valid"


def test_a_backfill_request_becomes_the_jobs_arguments(fake_dags_environment):
    result = dags_test(fake_dags_environment, "fake_offline_devices__backfill")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-5000:]
    assert "--start 2026-11-21T14:00:00.000Z --end 2026-11-21T20:00:00.000Z --output /lake/x" in output
    assert "2 slices, 1200 records read up to 2026-11-21T20:00:00.000Z" in output


def test_a_job_that_writes_no_summary_fails_the_task(fake_dags_environment):
    result = dags_test(fake_dags_environment, "fake_offline_devices__no_summary")
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "new_state=failed" in output and "the offline-device job succeeded but wrote no summary" in output, output[-5000:]
