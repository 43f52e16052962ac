"""`airflow dags test` on the offline-devices operator: a backfill request becomes the job's
arguments; a job that writes no summary fails the task; a live run with no new sealed hour starts
no Spark job, and one after a new seal does (the look reads a real seals table and checkpoint
files; the fake job writes them as the real one does: seals, Spark's offsets and commits). Bad params: tests/dags/test_dag_params.py.
The job itself runs against the real broker and lake in
tests/integration/test_offline_devices_determinism.py; spark-submit through the provider's
connection is run end to end by the persist, quality, recover and backfill DAG tests, which share
the operator base class."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.airflow_process import DagTestRun, airflow_rows, dags_test_many

REPO = Path(__file__).resolve().parents[2]

# The operator with spark-submit replaced: the fake job writes the summary the real one writes (or
# none), at the path the operator passed it.
FAKE_JOB_DAGS = """
import json
import os
from datetime import timedelta
from pathlib import Path

import pendulum
from airflow.sdk import dag, task

from tidemark.event_time_text import format_event_time, parse_event_time
from tidemark.offline_devices_result import OfflineDevicesResult
from tidemark_airflow.offline_devices_operator import OfflineDevicesOperator


def fake_result(mode, slices, records, read_until, horizon, opened, closed):
    \"\"\"The result the real job writes (tidemark.offline_devices_result), as the job encodes it.\"\"\"
    return OfflineDevicesResult(
        stream="telemetry", mode=mode, query_id="fake", output="/lake/x", batches=slices + 1, slices=slices,
        records=records, periods_opened=opened, periods_closed=closed, read_until=read_until, horizon=horizon,
        watermark=format_event_time(parse_event_time(read_until) - 1),
    )


class FakeJobOfflineDevicesOperator(OfflineDevicesOperator):
    def __init__(self, *, writes_summary, **kwargs):
        super().__init__(**kwargs)
        self.writes_summary = writes_summary

    def run_spark_submit(self, context, args):
        if self.writes_summary:
            fake_result(
                "backfill", 2, 1200, "2026-11-21T20:00:00.000Z", "2026-11-21T22:00:00.000Z", 3, 2
            ).write(args[args.index("--result") + 1])


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

SEALS = os.path.join(os.environ["TIDEMARK_LAKE_ROOT"], "telemetry", "seals")
CHECKPOINT = Path(os.environ["TIDEMARK_CHECKPOINT_ROOT"], "telemetry", "offline_devices")


class FakeLiveJobOperator(OfflineDevicesOperator):
    \"\"\"Stands in for the live job: reads the seals table up to its horizon and records it in the
    live checkpoint as Spark does (the slice's batch, then the batch that fires its timers).\"\"\"

    def run_spark_submit(self, context, args):
        import pyarrow.compute as pc
        from deltalake import DeltaTable

        self.log.info("FAKE SPARK-SUBMIT %s", " ".join(args))
        last = pc.max(DeltaTable(SEALS).to_pyarrow_table(columns=["hour"])["hour"]).as_py()
        until = int((last + timedelta(hours=1)).timestamp() * 1000)
        for folder in ("offsets", "commits"):
            (CHECKPOINT / folder).mkdir(parents=True, exist_ok=True)
        batch = len(list((CHECKPOINT / "offsets").iterdir()))
        for batch_id, watermark in ((batch, until - 900_001), (batch + 1, until - 1)):
            offset = {{"from_ms": until - 900_000, "until_ms": until, "horizon_ms": until, "events_version": 0}}
            (CHECKPOINT / "offsets" / str(batch_id)).write_text(
                "v1\\n" + json.dumps({{"batchWatermarkMs": watermark, "conf": {{}}}}) + "\\n" + json.dumps(offset)
            )
            (CHECKPOINT / "commits" / str(batch_id)).write_text("v1\\n" + json.dumps({{"nextBatchWatermarkMs": watermark}}))
        until_text = format_event_time(until)
        fake_result("live", 4, 100, until_text, until_text, 0, 0).write(args[args.index("--result") + 1])


@dag(dag_id="fake_offline_devices__live", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"))
def live():
    FakeLiveJobOperator(task_id="detect", stream="telemetry", conf_path={conf_path!r})


@dag(dag_id="fake_offline_devices__new_hour", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"))
def new_hour():
    @task
    def seal_next_hour():
        import pyarrow as pa
        import pyarrow.compute as pc
        from deltalake import DeltaTable, write_deltalake

        seals = DeltaTable(SEALS).to_pyarrow_table()
        hour = pc.max(seals["hour"]).as_py() + timedelta(hours=1)
        write_deltalake(SEALS, pa.Table.from_pylist([{{**seals.slice(0, 1).to_pylist()[0], "hour": hour}}], seals.schema), mode="append")

    seal_next_hour() >> FakeLiveJobOperator(task_id="detect", stream="telemetry", conf_path={conf_path!r})


@dag(dag_id="fake_offline_devices__look_off", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"))
def look_off():
    FakeLiveJobOperator(task_id="detect", stream="telemetry", conf_path={conf_path!r}, skip_when_nothing_new=False)


live_dag = live()
look_off_dag = look_off()
new_hour_dag = new_hour()
"""

# 2026-11-25T01:00Z and 02:00Z sealed before the first run: its horizon is 03:00Z.
SEALED_HOURS_MS = (1795568400000, 1795572000000)


@pytest.fixture(scope="module")
def fake_environment(airflow_environment, tmp_path_factory) -> dict[str, str]:
    """Airflow's environment with the fake DAGs, and a lake and checkpoints of this module's own."""
    dags = tmp_path_factory.mktemp("fake-offline-devices-dags")
    (dags / "fake_offline_devices.py").write_text(FAKE_JOB_DAGS.format(conf_path=str(REPO / "conf" / "streams.yaml")))
    lake = tmp_path_factory.mktemp("fake-offline-devices-lake")
    environment = {
        **airflow_environment,
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "TIDEMARK_LAKE_ROOT": str(lake / "lake"),
        "TIDEMARK_CHECKPOINT_ROOT": str(lake / "checkpoints"),
    }
    write_seals(lake / "lake" / "telemetry" / "seals", SEALED_HOURS_MS)
    return environment


@pytest.fixture(scope="module")
def fake_dag_runs(fake_environment) -> dict[str, DagTestRun]:
    """The fake DAGs, each run once by ``airflow dags test``, in one Airflow process."""
    # In this order: no_summary is the live detector's first run (no checkpoint yet); the two live
    # runs share the checkpoint the first writes; look_off submits with nothing new; new_hour seals
    # a fourth hour, then detects.
    runs = [
        ("fake_offline_devices__backfill", ["fake_offline_devices__backfill"]),
        ("fake_offline_devices__no_summary", ["fake_offline_devices__no_summary"]),
        ("live_first", ["fake_offline_devices__live", "2026-11-26T01:00:00+00:00"]),
        ("live_nothing_new", ["fake_offline_devices__live", "2026-11-26T02:00:00+00:00"]),
        ("live_look_off", ["fake_offline_devices__look_off", "2026-11-26T02:30:00+00:00"]),
        ("live_after_new_hour", ["fake_offline_devices__new_hour", "2026-11-26T03:00:00+00:00"]),
    ]
    return dict(zip((name for name, _ in runs), dags_test_many(fake_environment, [arguments for _, arguments in runs])))


def write_seals(path: Path, hours_ms) -> None:
    """The seals table as the persist job leaves it (tidemark.table_schemas.SEALS_COLUMNS)."""
    from datetime import UTC, datetime

    import pyarrow as pa
    from deltalake import write_deltalake

    stamps = pa.array([datetime.fromtimestamp(h / 1000, UTC) for h in hours_ms], pa.timestamp("us", tz="UTC"))
    table = pa.table(
        {
            "stream": ["telemetry"] * len(hours_ms),
            "hour": stamps,
            "sealed_at": stamps,
            "global_watermark": stamps,
            "micro_batch_id": pa.array(range(len(hours_ms)), pa.int64()),
        }
    )
    write_deltalake(str(path), table)


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


def test_a_live_run_with_no_new_sealed_hour_starts_no_spark_job(fake_dag_runs):
    first, again = fake_dag_runs["live_first"], fake_dag_runs["live_nothing_new"]
    assert first.returncode == 0, first.output[-5000:]
    assert first.output.count("FAKE SPARK-SUBMIT") == 1
    assert (
        "the detector's checkpoint holds no batch yet: its first run starts the stream: running the job" in first.output
    )
    assert again.returncode == 0, again.output[-5000:]
    assert "FAKE SPARK-SUBMIT" not in again.output and "Spark-Submit cmd" not in again.output
    # The horizon the first run read: the end of the last hour sealed before it (02:00Z + 1 h).
    assert (
        "Stream telemetry: sealed horizon 2026-11-25T03:00:00.000Z already read by the detector's last run "
        "(batch 1, read up to 2026-11-25T03:00:00.000Z, its timers fired); no Spark job started (" in again.output
    ), again.output[-5000:]
    assert "slices," not in again.output  # one line, not the job's summary line as well


def test_a_skipped_run_returns_the_summary_a_run_with_no_slice_returns(fake_dag_runs, fake_environment):
    (value,) = airflow_rows(
        fake_environment,
        "SELECT x.value FROM xcom x JOIN dag_run r ON x.dag_run_id = r.id WHERE r.dag_id = ? "
        "AND r.logical_date LIKE '2026-11-26 02:00:00%' AND x.task_id = 'detect' AND x.key = 'return_value'",
        "fake_offline_devices__live",
    )[0]
    summary = json.loads(value)
    if isinstance(summary, str):  # XCom's JSON column may hold the JSON text of the value
        summary = json.loads(summary)
    # The keys spark_jobs/offline_devices/job.py's live summary has; what the look compared.
    assert summary == {
        "stream": "telemetry",
        "mode": "live",
        "query_id": None,
        "output": f"{fake_environment['TIDEMARK_LAKE_ROOT']}/telemetry/offline_devices",
        "batches": 0,
        "slices": 0,
        "records": 0,
        "periods_opened": 0,
        "periods_closed": 0,
        "read_until": "2026-11-25T03:00:00.000Z",
        "horizon": "2026-11-25T03:00:00.000Z",
        "watermark": "2026-11-25T02:59:59.999Z",
        "cut_at_horizon": False,
        "rebuilt_after_erasure": False,
    }


def test_a_live_run_after_a_new_sealed_hour_runs_the_job(fake_dag_runs):
    run = fake_dag_runs["live_after_new_hour"]
    assert run.returncode == 0, run.output[-5000:]
    assert (
        "hours are sealed up to 2026-11-25T04:00:00.000Z, the detector read up to 2026-11-25T03:00:00.000Z: "
        "running the job" in run.output
    )
    assert run.output.count("FAKE SPARK-SUBMIT") == 1


def test_with_the_look_turned_off_every_live_run_submits_the_job(fake_dag_runs):
    run = fake_dag_runs["live_look_off"]
    assert run.returncode == 0, run.output[-5000:]
    assert run.output.count("FAKE SPARK-SUBMIT") == 1
    assert "no Spark job started" not in run.output and "running the job" not in run.output
