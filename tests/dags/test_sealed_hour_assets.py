"""`airflow dags test` on a throwaway DAG whose PersistStreamOperator has a fake job: every newly
sealed hour becomes one AssetEvent of the stream's sealed-hours asset in the metadata database,
and a run that seals nothing records none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.airflow_process import DagTestRun, airflow_rows, dags_test_many

REPO = Path(__file__).resolve().parents[2]

# The operator under test, with spark-submit replaced by writing the run summary the job would
# write at the path the operator passed it.
FAKE_JOB_DAGS = """
import pendulum
from airflow.sdk import dag

from tidemark.persist_run_summary import PersistRunSummary
from tidemark_airflow.persist_operator import PersistStreamOperator
from tidemark_airflow.sealed_hour_assets import sealed_hours_alias


class FakeJobPersistStreamOperator(PersistStreamOperator):
    def __init__(self, *, summary, **kwargs):
        super().__init__(**kwargs)
        self.summary = summary

    def run_spark_submit(self, context, args):
        if self.summary is not None:
            self.summary.write(args[args.index("--run-summary") + 1])


def fake_persist_dag(dag_id, summary):
    @dag(dag_id=dag_id, schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False)
    def fake_persist():
        FakeJobPersistStreamOperator(
            task_id="persist",
            stream="telemetry",
            conf_path={conf_path!r},
            summary=summary,
            outlets=[sealed_hours_alias("telemetry")],
            skip_when_nothing_new=False,  # the fake job is what these runs are about
        )

    return fake_persist()


def summary(*sealed_hours):
    return PersistRunSummary(
        stream="telemetry",
        mode="available_now",
        query_id="fake",
        batches=5,
        global_watermark="2026-11-22T03:59:29.999Z",
        sealed_hours=sealed_hours,
        event_hours=("2026-11-22T01:00:00.000Z", "2026-11-22T02:00:00.000Z", "2026-11-22T03:00:00.000Z"),
        insert_only_batches=0,
        inserted=1500,
        commit_conflicts_retried=0,
        resumed_from_ledger=False,
    )


seals_two = fake_persist_dag("fake_persist__seals_two", summary("2026-11-22T01:00:00.000Z", "2026-11-22T02:00:00.000Z"))
seals_none = fake_persist_dag("fake_persist__seals_none", summary())
writes_no_summary = fake_persist_dag("fake_persist__writes_no_summary", None)
"""

FAKE_DAG_IDS = ("fake_persist__seals_two", "fake_persist__seals_none", "fake_persist__writes_no_summary")


@pytest.fixture(scope="module")
def fake_dag_runs(airflow_environment, tmp_path_factory) -> dict[str, DagTestRun]:
    """The three fake DAGs, each run once by ``airflow dags test``, all in one Airflow process."""
    dags = tmp_path_factory.mktemp("fake-persist-dags")
    (dags / "fake_persist.py").write_text(FAKE_JOB_DAGS.format(conf_path=str(REPO / "conf" / "streams.yaml")))
    environment = {**airflow_environment, "AIRFLOW__CORE__DAGS_FOLDER": str(dags)}
    return dict(zip(FAKE_DAG_IDS, dags_test_many(environment, [[dag_id] for dag_id in FAKE_DAG_IDS])))


def asset_events_of(airflow_environment: dict[str, str], dag_id: str) -> list[dict]:
    """The asset events a DAG's runs emitted, oldest first: the asset's name and URI, the event's extra."""
    rows = airflow_rows(
        airflow_environment,
        "SELECT asset.name, asset.uri, asset_event.extra FROM asset_event JOIN asset ON asset_event.asset_id = asset.id"
        " WHERE asset_event.source_dag_id = ? ORDER BY asset_event.id",
        dag_id,
    )
    return [{"name": name, "uri": uri, "extra": json.loads(extra)} for name, uri, extra in rows]


def test_each_newly_sealed_hour_is_one_asset_event(fake_dag_runs, airflow_environment):
    run = fake_dag_runs["fake_persist__seals_two"]
    assert run.returncode == 0, run.output[-5000:]

    events = asset_events_of(airflow_environment, "fake_persist__seals_two")
    assert events == [
        {
            "name": "tidemark_sealed_hours__telemetry",
            "uri": "x-tidemark://telemetry/sealed_hours",
            "extra": {"stream": "telemetry", "hour": hour, "global_watermark": "2026-11-22T03:59:29.999Z"},
        }
        for hour in ("2026-11-22T01:00:00Z", "2026-11-22T02:00:00Z")
    ]


def test_a_run_that_seals_nothing_emits_no_asset_event(fake_dag_runs, airflow_environment):
    run = fake_dag_runs["fake_persist__seals_none"]
    assert run.returncode == 0, run.output[-5000:]
    assert "Stream telemetry: 0 newly sealed hours []" in run.output, "the summary was read"

    assert asset_events_of(airflow_environment, "fake_persist__seals_none") == []


def test_a_job_that_writes_no_summary_fails_the_task_and_emits_nothing(fake_dag_runs, airflow_environment):
    run = fake_dag_runs["fake_persist__writes_no_summary"]

    assert run.returncode != 0, run.output[-5000:]
    assert "new_state=failed" in run.output and "the persist job succeeded but wrote no run summary" in run.output, (
        run.output[-5000:]
    )
    assert asset_events_of(airflow_environment, "fake_persist__writes_no_summary") == []
