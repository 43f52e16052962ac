"""`airflow dags test` on the offline-devices operator: a backfill request becomes the job's
arguments; a job that writes no summary fails the task. Bad params: tests/dags/test_dag_params.py.
The job itself runs against the real broker and lake in
tests/integration/test_offline_devices_determinism.py; spark-submit through the provider's
connection is run end to end by the persist, quality, recover and backfill DAG tests, which share
the operator base class."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.airflow_process import DagTestRun, dags_test_many

REPO = Path(__file__).resolve().parents[2]

# The operator with spark-submit replaced: the fake job writes the summary the real one writes (or
# none), at the path the operator passed it.
FAKE_JOB_DAGS = """
import json

import pendulum
from airflow.sdk import dag

from tidemark_airflow.offline_devices_operator import OfflineDevicesOperator


class FakeJobOfflineDevicesOperator(OfflineDevicesOperator):
    def __init__(self, *, writes_summary, **kwargs):
        super().__init__(**kwargs)
        self.writes_summary = writes_summary

    def run_spark_submit(self, context, args):
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
"""


@pytest.fixture(scope="module")
def fake_dag_runs(airflow_environment, tmp_path_factory) -> dict[str, DagTestRun]:
    """The two fake DAGs, each run once by ``airflow dags test``, in one Airflow process."""
    dags = tmp_path_factory.mktemp("fake-offline-devices-dags")
    (dags / "fake_offline_devices.py").write_text(FAKE_JOB_DAGS.format(conf_path=str(REPO / "conf" / "streams.yaml")))
    environment = {**airflow_environment, "AIRFLOW__CORE__DAGS_FOLDER": str(dags)}
    dag_ids = ("fake_offline_devices__backfill", "fake_offline_devices__no_summary")
    return dict(zip(dag_ids, dags_test_many(environment, [[dag_id] for dag_id in dag_ids])))


def test_a_backfill_request_becomes_the_jobs_arguments(fake_dag_runs):
    run = fake_dag_runs["fake_offline_devices__backfill"]
    assert run.returncode == 0, run.output[-5000:]
    assert "--start 2026-11-21T14:00:00.000Z --end 2026-11-21T20:00:00.000Z --output /lake/x" in run.output
    assert "2 slices, 1200 records read up to 2026-11-21T20:00:00.000Z" in run.output


def test_a_job_that_writes_no_summary_fails_the_task(fake_dag_runs):
    run = fake_dag_runs["fake_offline_devices__no_summary"]
    assert run.returncode != 0
    assert "new_state=failed" in run.output and "the offline-device job succeeded but wrote no summary" in run.output, (
        run.output[-5000:]
    )
