"""The persist job on a real Spark cluster: a standalone master and a worker on loopback, the job
submitted by the persist DAG through the Airflow Spark connection (client deploy mode: the driver
in the task, executors on the worker). Its lake holds exactly what was produced, payload
included: what the same job writes on local[*] (every other persist test). A master that cannot be reached fails the task within seconds,
naming the master and what to check.

The topic is on the broker's mutual-TLS listener (a client certificate and key of the private CA,
``ssl.client.auth=required``), its settings in a ``kafka`` Airflow connection: the executors on
the worker read it with the settings the driver handed their Python workers, and the private key
is in no task log, executor log or file the run wrote."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.persist_job import produce, telemetry_value, write_stream_config
from harness.secret_search import SecretSearch
from harness.secured_kafka import mutual_tls
from stack.ports import free_port

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
APP_NAME = "tidemark-persist-telemetry"  # the operator's default: tidemark-<job>-<stream>
PARTITIONS = 4
MINUTE_MS = 60_000


def _connection(master_host: str, port: int) -> str:
    return json.dumps({"conn_type": "spark", "host": master_host, "port": port, "extra": {"deploy-mode": "client"}})


def _rows(table: Path, drop: tuple[str, ...]) -> list[dict]:
    from deltalake import DeltaTable

    rows = DeltaTable(str(table)).to_pyarrow_table().to_pylist()
    return sorted(
        ({k: v for k, v in row.items() if k not in drop} for row in rows),
        key=lambda row: (row["source_partition"], row.get("source_offset", row.get("start_offset"))),
    )


def test_persist_dag_on_a_standalone_cluster_writes_exactly_what_was_produced(
    airflow_environment, kafka_broker, spark_cluster, tmp_path
):
    topic = "cluster_persist"
    kafka_broker.create_topic(topic, PARTITIONS)
    now_ms = int(time.time() * 1000)
    # Per partition, in offset order: 60 records with event times rising over the last 90 minutes
    # (log timestamp = event time, as the generator writes them), one record whose event time does
    # not parse, and one stamped now but three hours old: it is read only once the global watermark
    # is within max_drift (15m) of now, far past its event time + allowed lateness (10m), so it is late.
    good, bad, late = [], [], []
    for p in range(PARTITIONS):
        good += [(p, now_ms - 90 * MINUTE_MS + i * 89 * 1_000 + p * 7, i) for i in range(60)]
        bad.append((p, 60))
        late.append((p, now_ms - 180 * MINUTE_MS + p, 61))
    records = [(p, telemetry_value(f"scooter-{p}", t), t) for p, t, _ in good]
    records += [(p, b'{"device_id": "s", "event_time": "not a time"}', now_ms) for p, _ in bad]
    records += [(p, telemetry_value("scooter-late", t), now_ms) for p, t, _ in late]
    secured = mutual_tls(kafka_broker)
    produce(secured.bootstrap, topic, records, secured.settings)
    per_partition = {p: 62 for p in range(PARTITIONS)}

    (tmp_path / "cluster").mkdir()
    cluster_conf = write_stream_config(
        tmp_path / "cluster", secured.bootstrap, topic, PARTITIONS, kafka_conn_id=secured.conn_id
    )
    environment = {
        **airflow_environment,
        **secured.airflow_environment(),
        "TIDEMARK_CONF": str(cluster_conf),
        "AIRFLOW_CONN_SPARK_DEFAULT": _connection("spark://127.0.0.1", spark_cluster.master_port),
    }
    apps_before = {app["id"] for app in spark_cluster.state()["completedapps"]}

    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "airflow", "dags", "test", "tidemark_persist__telemetry"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
    )
    cluster_s = time.monotonic() - started
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    assert f"--master {spark_cluster.master_url}" in output and "--deploy-mode client" in output

    # The application ran on the cluster, its executors on the worker (the driver, in client mode,
    # runs no task: every record was read and decoded by the worker's executors).
    apps = [app for app in spark_cluster.state()["completedapps"] if app["id"] not in apps_before]
    assert [(app["name"], app["state"]) for app in apps] == [(APP_NAME, "FINISHED")], apps
    executors = [e for e in spark_cluster.worker_state()["finishedexecutors"] if e["appid"] == apps[0]["id"]]
    assert executors, f"no executor of {apps[0]['id']} on the worker"

    print(f"cluster run (airflow dags test) {cluster_s:.1f} s")

    # What local[*] writes is what was produced (the other persist tests show it, on this same
    # layout); the cluster's lake must be exactly that, payload included.
    lake = tmp_path / "cluster" / "lake" / "telemetry"
    events = _rows(lake / "events", drop=("step_id",))
    assert [
        (r["source_partition"], r["source_offset"], int(r["event_time"].timestamp() * 1000)) for r in events
    ] == sorted((p, offset, t) for p, t, offset in good)
    assert {(r["source_partition"], r["device_id"], r["lat"], r["lon"], r["battery"]) for r in events} == {
        (p, f"scooter-{p}", 52.0, 4.9, 50) for p in range(PARTITIONS)
    }
    quarantine = _rows(lake / "quarantine", drop=("step_id", "read_time"))
    assert [(r["source_partition"], r["source_offset"], r["reason"]) for r in quarantine] == [
        (p, offset, "unparsable_event_time") for p, offset in bad
    ]
    late_rows = _rows(lake / "late", drop=("step_id",))
    assert [
        (r["source_partition"], r["source_offset"], int(r["event_time"].timestamp() * 1000)) for r in late_rows
    ] == [(p, offset, t) for p, t, offset in late]
    # The ledger's ranges of each partition are contiguous from offset 0 to its end, and hold
    # every record once.
    ledger = _rows(lake / "ledger", drop=())
    for p, count in per_partition.items():
        ranges = sorted(
            (r["start_offset"], r["end_offset"])
            for r in ledger
            if r["source_partition"] == p and r["end_offset"] > r["start_offset"]
        )
        assert ranges[0][0] == 0 and ranges[-1][1] == count, (p, ranges)
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:])), (p, ranges)
        assert sum(r["data_records"] for r in ledger if r["source_partition"] == p) == count

    # The client's private key (a line of its PEM body) is nowhere: the task log, Airflow's logs,
    # the executors' logs on the worker, the lake and checkpoint.
    key_line = Path(secured.settings["ssl.key.location"]).read_text().splitlines()[2]
    search = SecretSearch((key_line,), control=topic)
    search.folders(tmp_path, Path(airflow_environment["AIRFLOW_HOME"]), spark_cluster.work_dir)
    search.texts({"task log": output})
    assert search.found == [] and search.controls_found


UNREACHABLE_DAG = """
import pendulum
from airflow.sdk import dag

from tidemark_airflow.persist_operator import PersistStreamOperator
from tidemark_airflow.sealed_hour_assets import sealed_hours_alias


@dag(dag_id="persist_unreachable_master", schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"), catchup=False)
def persist_unreachable_master():
    PersistStreamOperator(
        task_id="persist", stream="telemetry", conf_path={conf_path!r}, retries=0,
        outlets=[sealed_hours_alias("telemetry")],
    )


persist_unreachable_master()
"""


def test_an_unreachable_master_fails_the_task_at_once_naming_it_and_what_to_check(airflow_environment, tmp_path):
    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "persist_unreachable_master.py").write_text(
        UNREACHABLE_DAG.format(conf_path=str(REPO / "conf" / "streams.yaml"))
    )
    port = free_port()  # nothing listens there
    environment = {
        **airflow_environment,
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW_CONN_SPARK_DEFAULT": _connection("spark://127.0.0.1", port),
    }

    result = subprocess.run(
        [sys.executable, "-m", "airflow", "dags", "test", "persist_unreachable_master"],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = result.stdout + result.stderr

    assert result.returncode != 0, output[-5000:]
    assert "new_state=failed" in output, output[-5000:]
    assert f"The Spark master spark://127.0.0.1:{port} cannot be reached" in output, output[-5000:]
    assert f"127.0.0.1:{port} refused the connection" in output
    assert "Check that the master is running" in output and "'spark_default'" in output and "firewall" in output
    # Failed before spark-submit started: no minute of spark-submit's own retries.
    assert "Cannot execute: spark-submit" not in output and "All masters are unresponsive" not in output
