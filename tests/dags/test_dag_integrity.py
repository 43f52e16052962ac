"""Every DAG file imports cleanly, builds one persist, quality, recover, redrive and erase DAG per stream, and does
no work at parse time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.airflow_process import run_python

REPO = Path(__file__).resolve().parents[2]
DAG_FILE = REPO / "dags" / "tidemark_persist.py"
DAG_FILES = sorted((REPO / "dags").glob("tidemark_*.py"))

# One Airflow process: each DAG file run on its own first (which heavy modules did parsing it
# import?), then the DagBag of the folder described. Modules stay imported, so a file is charged
# only with what it added: the first file that imports pyspark is the one named.
_PARSE_AND_DESCRIBE = f"""
import json, runpy, sys
HEAVY = ("pyspark", "confluent_kafka", "delta")
imported_by = {{}}
for path in {[str(path) for path in DAG_FILES]!r}:
    before = {{m for m in HEAVY if m in sys.modules}}
    runpy.run_path(path)
    imported_by[path] = sorted({{m for m in HEAVY if m in sys.modules}} - before)

from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder={str(REPO / "dags")!r})
dag = bag.get_dag("tidemark_persist__telemetry")
task = dag.get_task("persist") if dag else None
print(json.dumps({{
    "imported_by": imported_by,
    "import_errors": {{str(k): v for k, v in bag.import_errors.items()}},
    "dag_ids": sorted(bag.dag_ids),
    "max_active_runs": dag.max_active_runs,
    "catchup": dag.catchup,
    "tags": sorted(dag.tags),
    "doc_md": dag.doc_md,
    "conn_id": task._conn_id,
    "stream": task.stream,
    "quality_tasks": sorted(bag.get_dag("tidemark_quality__telemetry").task_ids),
    "recover_tasks": sorted(bag.get_dag("tidemark_recover__telemetry").task_ids),
    "recover_params": sorted(bag.get_dag("tidemark_recover__telemetry").params.keys()),
    "redrive_tasks": sorted(bag.get_dag("tidemark_redrive__telemetry").task_ids),
    "accept_lost_tasks": sorted(bag.get_dag("tidemark_accept_lost__telemetry").task_ids),
    "accept_lost_params": sorted(bag.get_dag("tidemark_accept_lost__telemetry").params.keys()),
    "redrive_params": sorted(bag.get_dag("tidemark_redrive__telemetry").params.keys()),
    "redrive_max_active_runs": bag.get_dag("tidemark_redrive__telemetry").max_active_runs,
    "erase_tasks": sorted(bag.get_dag("tidemark_erase__telemetry").task_ids),
    "erase_params": sorted(bag.get_dag("tidemark_erase__telemetry").params.keys()),
    "erase_max_active_runs": bag.get_dag("tidemark_erase__telemetry").max_active_runs,
    "backfill_tasks": sorted(bag.get_dag("tidemark_backfill__telemetry").task_ids),
    "backfill_params": sorted(bag.get_dag("tidemark_backfill__telemetry").params.keys()),
    "backfill_schedule": bag.get_dag("tidemark_backfill__telemetry").timetable.summary,
    "offline_devices_tasks": sorted(bag.get_dag("tidemark_offline_devices__telemetry").task_ids),
    "offline_devices_params": sorted(bag.get_dag("tidemark_offline_devices__telemetry").params.keys()),
    "offline_devices_schedule": bag.get_dag("tidemark_offline_devices__telemetry").timetable.asset_condition.name,
    "offline_devices_max_active_runs": bag.get_dag("tidemark_offline_devices__telemetry").max_active_runs,
    "sweep_tasks": sorted(bag.get_dag("tidemark_sweep__telemetry").task_ids),
    "sweep_schedule": bag.get_dag("tidemark_sweep__telemetry").timetable.summary,
    "sweep_flag": bag.get_dag("tidemark_sweep__telemetry").get_task("sweep").sweep,
    "sweep_reconcile": bag.get_dag("tidemark_sweep__telemetry").get_task("sweep").reconcile,
    "maintenance_tasks": sorted(bag.get_dag("tidemark_maintenance__telemetry").task_ids),
    "maintenance_schedule": bag.get_dag("tidemark_maintenance__telemetry").timetable.summary,
    "maintenance_max_active_runs": bag.get_dag("tidemark_maintenance__telemetry").max_active_runs,
    "reader_timeouts_s": sorted({{
        bag.get_dag(f"tidemark_{{kind}}__telemetry").get_task(task).execution_timeout.total_seconds()
        for kind, task in (("quality", "check"), ("sweep", "sweep"), ("backfill", "backfill"),
                           ("offline_devices", "detect"), ("recover", "recheck"), ("redrive", "recheck"),
                           ("erase", "recheck"))
    }}),
}}))
"""


@pytest.fixture(scope="module")
def described(airflow_environment) -> dict:
    result = run_python(airflow_environment, _PARSE_AND_DESCRIBE)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_dag_bag_imports_and_persist_dag_follows_the_config(described):
    assert described["import_errors"] == {}
    # The shipped conf/streams.yaml has two streams: telemetry (Kafka, with the offline-device
    # detector) and rides (Kinesis, without): one DAG of each kind per stream, nothing else.
    assert described["dag_ids"] == [
        "tidemark_accept_lost__rides",
        "tidemark_accept_lost__telemetry",
        "tidemark_backfill__rides",
        "tidemark_backfill__telemetry",
        "tidemark_erase__rides",
        "tidemark_erase__telemetry",
        "tidemark_maintenance__rides",
        "tidemark_maintenance__telemetry",
        "tidemark_offline_devices__telemetry",
        "tidemark_persist__rides",
        "tidemark_persist__telemetry",
        "tidemark_quality__rides",
        "tidemark_quality__telemetry",
        "tidemark_recover__rides",
        "tidemark_recover__telemetry",
        "tidemark_redrive__rides",
        "tidemark_redrive__telemetry",
        "tidemark_sweep__rides",
        "tidemark_sweep__telemetry",
    ]
    assert described["backfill_tasks"] == ["backfill", "recovery_requests", "trigger_recovery", "validate", "verdict"]
    assert described["backfill_params"] == ["compare", "end", "partitions", "shadow_name", "start", "target"]
    assert described["backfill_schedule"] == "30 2 * * *"
    assert described["offline_devices_tasks"] == ["detect", "validate"]
    assert described["offline_devices_params"] == ["end", "output", "start"]
    assert described["offline_devices_schedule"] == "tidemark_sealed_hours__telemetry"
    assert described["offline_devices_max_active_runs"] == 1
    # The shipped streams alarm the embedded stack's inbox: the quality and sweep DAGs have an alarms task.
    assert described["quality_tasks"] == [
        "alarms",
        "check",
        "hours_to_check",
        "recovery_requests",
        "trigger_recovery",
        "verdict",
    ]
    assert described["recover_tasks"] == [
        "live_job_was_the_cause",
        "recheck",
        "recover",
        "restart_live",
        "touched_hours",
        "validate",
    ]
    assert described["recover_params"] == ["partition", "ranges", "reason", "restart_live", "stream"]
    assert described["redrive_tasks"] == ["recheck", "redrive", "touched_hours", "validate"]
    assert described["redrive_params"] == ["hours", "reason", "stream"]
    assert described["redrive_max_active_runs"] == 1
    assert described["erase_tasks"] == ["erase", "recheck", "touched_hours", "validate"]
    assert described["erase_params"] == ["reason", "requested_by", "stream", "where"]
    assert described["erase_max_active_runs"] == 1
    assert described["accept_lost_tasks"] == ["accept_lost", "validate"]
    assert described["accept_lost_params"] == ["by", "partition", "range", "reason", "stream"]
    assert described["sweep_tasks"] == ["alarms", "recovery_requests", "sweep", "trigger_recovery", "verdict"]
    assert described["sweep_schedule"] == "40 */6 * * *"
    assert (described["sweep_flag"], described["sweep_reconcile"]) == (True, False)
    assert described["maintenance_tasks"] == ["maintain"]
    assert (described["maintenance_schedule"], described["maintenance_max_active_runs"]) == ("15 * * * *", 1)
    # Every task that reads the lake is stopped after maintenance.reader_timeout (6h), the bound
    # VACUUM's retention is proved against.
    assert described["reader_timeouts_s"] == [6 * 3600.0]
    assert described["max_active_runs"] == 1
    assert described["catchup"] is False
    assert {"tidemark", "persist", "telemetry"} <= set(described["tags"])
    assert "telemetry" in described["doc_md"]
    assert (described["conn_id"], described["stream"]) == ("spark_default", "telemetry")


@pytest.mark.parametrize("dag_file", DAG_FILES, ids=[path.stem for path in DAG_FILES])
def test_parsing_starts_no_spark_and_opens_no_kafka_client(described, dag_file):
    assert described["imported_by"][str(dag_file)] == [], f"parsing {dag_file.name} imported these"


def test_a_bad_config_fails_parsing_naming_the_key(airflow_environment, tmp_path):
    bad = tmp_path / "streams.yaml"
    bad.write_text((REPO / "conf" / "streams.yaml").read_text().replace("max_drift: 15m", "max_drift: soon"))
    result = run_python(
        {**airflow_environment, "TIDEMARK_CONF": str(bad)}, f"import runpy; runpy.run_path({str(DAG_FILE)!r})"
    )
    assert result.returncode != 0
    assert "streams.telemetry.event_time.max_drift" in result.stderr


def test_a_family_gets_a_topics_dag_and_each_listed_member_its_dags(airflow_environment, tmp_path):
    """Members come from the listing file alone: parsing asks no broker (the brokers named here
    do not exist)."""
    import yaml

    from tidemark.stream_families import stream_name_for
    from tidemark.topic_listing import refreshed, write_listing

    shipped = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())["streams"]["telemetry"]
    del shipped["source"]["topic"], shipped["source"]["partitions"], shipped["offline_devices"]
    shipped["source"]["bootstrap_servers"] = "127.0.0.1:1"
    conf = tmp_path / "streams.yaml"
    conf.write_text(
        yaml.safe_dump({"families": {"shops": {"match": r"shops\..+", "refresh": "*/2 * * * *", **shipped}}})
    )
    listing = refreshed(None, "shops", "127.0.0.1:1", {"shops.eu": 2, "shops.us": 1, "other": 1}, 0, stream_name_for)
    write_listing(tmp_path / "listings" / "shops.json", listing)
    script = f"""
import json
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder={str(REPO / "dags")!r})
topics = bag.get_dag("tidemark_topics__shops")
recover = bag.get_dag("tidemark_recover__family__shops")
backfill = bag.get_dag("tidemark_backfill__family__shops")
sweep = bag.get_dag("tidemark_sweep__family__shops")
print(json.dumps({{"errors": {{str(k): v for k, v in bag.import_errors.items()}}, "dag_ids": sorted(bag.dag_ids),
  "schedule": topics.timetable.expression, "tasks": topics.task_ids, "family": topics.get_task("refresh").family,
  "recover_stream": recover.params.get_param("stream").schema, "recover_operator_stream": recover.get_task("recover").stream,
  "restart": recover.get_task("restart_live").trigger_dag_id,
  "backfill_stream": backfill.params.get_param("stream").schema, "backfill_tasks": sorted(backfill.task_ids),
  "backfill_bound": backfill.get_task("backfill").partial_kwargs.get("max_active_tis_per_dagrun"),
  "sweep_tasks": sorted(sweep.task_ids), "sweep_schedule": sweep.timetable.summary,
  "sweep_family": sweep.get_task("sweep").family, "sweep_sweeps": sweep.get_task("sweep").sweep,
  "sweep_recover": sweep.get_task("trigger_recovery").partial_kwargs.get("trigger_dag_id")}}))
"""
    result = run_python({**airflow_environment, "TIDEMARK_CONF": str(conf)}, script)
    assert result.returncode == 0, result.stderr[-3000:]
    described = json.loads(result.stdout.strip().splitlines()[-1])
    assert described["errors"] == {}
    assert "tidemark_topics__shops" in described["dag_ids"]
    assert not any(d.startswith(("tidemark_sweep__shops", "tidemark_backfill__shops")) for d in described["dag_ids"])
    assert "tidemark_quality__shops_eu" not in described["dag_ids"], "a family's members are checked in its DAG"
    assert "tidemark_persist__shops_eu" not in described["dag_ids"], "a bounded family's members persist in its DAG"
    assert not any("other" in dag_id for dag_id in described["dag_ids"])
    # One DAG per family for what is triggered with a stream: the member is the run's param.
    assert [d for d in described["dag_ids"] if "family__" in d] == [
        "tidemark_accept_lost__family__shops",
        "tidemark_backfill__family__shops",
        "tidemark_erase__family__shops",
        "tidemark_maintenance__family__shops",
        "tidemark_persist__family__shops",
        "tidemark_quality__family__shops",
        "tidemark_recover__family__shops",
        "tidemark_redrive__family__shops",
        "tidemark_sweep__family__shops",
    ]
    assert not any(d.startswith(("tidemark_recover__shops", "tidemark_erase__shops")) for d in described["dag_ids"])
    assert described["recover_stream"]["enum"] == ["shops_eu", "shops_us"]
    assert described["recover_operator_stream"] == "{{ params.stream }}"
    assert described["restart"] == "tidemark_persist__family__shops"
    # The daily reconciliation: one DAG for the family, a task per member, at most max_drivers
    # (default 4) at a time. The sweep: one task, one driver, for every member.
    assert described["backfill_stream"]["enum"] == ["", "shops_eu", "shops_us"]
    assert described["backfill_tasks"] == ["backfill", "recovery_requests", "trigger_recovery", "validate", "verdict"]
    assert described["backfill_bound"] == 4
    assert described["sweep_tasks"] == ["alarms", "recovery_requests", "sweep", "trigger_recovery", "verdict"]
    assert (described["sweep_family"], described["sweep_sweeps"]) == ("shops", True)
    assert described["sweep_recover"] == "tidemark_recover__family__shops"
    assert (described["schedule"], described["tasks"], described["family"]) == ("*/2 * * * *", ["refresh"], "shops")
