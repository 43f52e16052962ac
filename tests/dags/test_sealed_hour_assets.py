"""`airflow dags test` on a throwaway DAG whose PersistStreamOperator has a fake job: every newly
sealed hour becomes one AssetEvent of the stream's sealed-hours asset in the metadata database,
and a run that seals nothing records none."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.airflow_process import run_python

REPO = Path(__file__).resolve().parents[2]

# The operator under test, with spark-submit replaced by writing the run summary the job would
# write at the path the operator passed it.
FAKE_JOB_DAGS = '''
import json

import pendulum
from airflow.sdk import dag

from tidemark_airflow.persist_operator import PersistStreamOperator
from tidemark_airflow.sealed_hour_assets import sealed_hours_alias


class FakeJobPersistStreamOperator(PersistStreamOperator):
    def __init__(self, *, summary, **kwargs):
        super().__init__(**kwargs)
        self.summary = summary

    def submit_job(self, context):
        args = self.application_args
        if self.summary is not None:
            with open(args[args.index("--run-summary") + 1], "w") as summary_file:
                json.dump(self.summary, summary_file)


def fake_persist_dag(dag_id, summary):
    @dag(dag_id=dag_id, schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False)
    def fake_persist():
        FakeJobPersistStreamOperator(
            task_id="persist",
            stream="telemetry",
            conf_path={conf_path!r},
            summary=summary,
            outlets=[sealed_hours_alias("telemetry")],
        )

    return fake_persist()


SUMMARY = {{"stream": "telemetry", "mode": "available_now", "batches": 5, "global_watermark": "2026-11-22T03:59:29.999Z"}}
seals_two = fake_persist_dag(
    "fake_persist__seals_two", {{**SUMMARY, "sealed_hours": ["2026-11-22T01:00:00Z", "2026-11-22T02:00:00Z"]}}
)
seals_none = fake_persist_dag("fake_persist__seals_none", {{**SUMMARY, "sealed_hours": []}})
writes_no_summary = fake_persist_dag("fake_persist__writes_no_summary", None)
'''

# Run in a child process, followed by a call: the extras of one DAG's asset events, oldest first.
_ASSET_EVENTS_OF = """
import json
from sqlalchemy import select
from airflow.models.asset import AssetEvent, AssetModel
from airflow.utils.session import create_session

def asset_events_of(dag_id):
    with create_session() as session:
        rows = session.execute(
            select(AssetModel.name, AssetModel.uri, AssetEvent.extra)
            .join(AssetModel, AssetEvent.asset_id == AssetModel.id)
            .where(AssetEvent.source_dag_id == dag_id)
            .order_by(AssetEvent.id)
        ).all()
    return [{"name": name, "uri": uri, "extra": extra} for name, uri, extra in rows]
"""

@pytest.fixture(scope="module")
def fake_dags_environment(airflow_environment, tmp_path_factory) -> dict[str, str]:
    dags = tmp_path_factory.mktemp("fake-persist-dags")
    (dags / "fake_persist.py").write_text(FAKE_JOB_DAGS.format(conf_path=str(REPO / "conf" / "streams.yaml")))
    return {**airflow_environment, "AIRFLOW__CORE__DAGS_FOLDER": str(dags)}


def dags_test(environment: dict[str, str], dag_id: str) -> tuple[int, str]:
    """Run ``airflow dags test dag_id``; returns its exit code and its output."""
    result = subprocess.run(
        [sys.executable, "-m", "airflow", "dags", "test", dag_id], env=environment, capture_output=True, text=True, timeout=300
    )
    return result.returncode, result.stdout + result.stderr


def asset_events_of(environment: dict[str, str], dag_id: str) -> list[dict]:
    result = run_python(environment, _ASSET_EVENTS_OF + f"print(json.dumps(asset_events_of({dag_id!r})))")
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_each_newly_sealed_hour_is_one_asset_event(fake_dags_environment):
    returncode, output = dags_test(fake_dags_environment, "fake_persist__seals_two")
    assert returncode == 0, output[-5000:]

    events = asset_events_of(fake_dags_environment, "fake_persist__seals_two")
    assert events == [
        {
            "name": "tidemark_sealed_hours__telemetry",
            "uri": "x-tidemark://telemetry/sealed_hours",
            "extra": {"stream": "telemetry", "hour": hour, "global_watermark": "2026-11-22T03:59:29.999Z"},
        }
        for hour in ("2026-11-22T01:00:00Z", "2026-11-22T02:00:00Z")
    ]


def test_a_run_that_seals_nothing_emits_no_asset_event(fake_dags_environment):
    returncode, output = dags_test(fake_dags_environment, "fake_persist__seals_none")
    assert returncode == 0, output[-5000:]
    assert "Stream telemetry: 0 newly sealed hours []" in output, "the summary was read"

    assert asset_events_of(fake_dags_environment, "fake_persist__seals_none") == []


def test_a_job_that_writes_no_summary_fails_the_task_and_emits_nothing(fake_dags_environment):
    returncode, output = dags_test(fake_dags_environment, "fake_persist__writes_no_summary")

    assert returncode != 0, output[-5000:]
    assert "new_state=failed" in output and "the persist job succeeded but wrote no run summary" in output, output[-5000:]
    assert asset_events_of(fake_dags_environment, "fake_persist__writes_no_summary") == []
