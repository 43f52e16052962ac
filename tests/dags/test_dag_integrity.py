"""Every DAG file imports cleanly, builds one persist, quality and recover DAG per stream, and does
no work at parse time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.airflow_process import run_python

REPO = Path(__file__).resolve().parents[2]
DAG_FILE = REPO / "dags" / "tidemark_persist.py"
DAG_FILES = sorted((REPO / "dags").glob("tidemark_*.py"))

_DESCRIBE_DAG_BAG = f"""
import json
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder={str(REPO / "dags")!r})
dag = bag.get_dag("tidemark_persist__telemetry")
task = dag.get_task("persist") if dag else None
print(json.dumps({{
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
    "backfill_tasks": sorted(bag.get_dag("tidemark_backfill__telemetry").task_ids),
    "backfill_params": sorted(bag.get_dag("tidemark_backfill__telemetry").params.keys()),
    "backfill_schedule": bag.get_dag("tidemark_backfill__telemetry").timetable.summary,
    "offline_devices_tasks": sorted(bag.get_dag("tidemark_offline_devices__telemetry").task_ids),
    "offline_devices_params": sorted(bag.get_dag("tidemark_offline_devices__telemetry").params.keys()),
    "offline_devices_schedule": bag.get_dag("tidemark_offline_devices__telemetry").timetable.asset_condition.name,
    "offline_devices_max_active_runs": bag.get_dag("tidemark_offline_devices__telemetry").max_active_runs,
}}))
"""


def test_dag_bag_imports_and_persist_dag_follows_the_config(airflow_environment):
    result = run_python(airflow_environment, _DESCRIBE_DAG_BAG)
    assert result.returncode == 0, result.stderr[-3000:]
    described = json.loads(result.stdout.strip().splitlines()[-1])
    assert described["import_errors"] == {}
    assert {"tidemark_backfill__telemetry", "tidemark_persist__telemetry", "tidemark_quality__telemetry", "tidemark_recover__telemetry"} <= set(described["dag_ids"])
    assert described["backfill_tasks"] == ["backfill", "recovery_requests", "trigger_recovery", "validate", "verdict"]
    assert described["backfill_params"] == ["compare", "end", "partitions", "shadow_name", "start", "target"]
    assert described["backfill_schedule"] == "30 2 * * *"
    assert "tidemark_offline_devices__telemetry" in described["dag_ids"]
    assert described["offline_devices_tasks"] == ["detect", "validate"]
    assert described["offline_devices_params"] == ["end", "output", "start"]
    assert described["offline_devices_schedule"] == "tidemark_sealed_hours__telemetry"
    assert described["offline_devices_max_active_runs"] == 1
    assert described["quality_tasks"] == ["check", "hours_to_check", "recovery_requests", "trigger_recovery", "verdict"]
    assert described["recover_tasks"] == ["live_job_was_the_cause", "recheck", "recover", "restart_live", "touched_hours", "validate"]
    assert described["recover_params"] == ["partition", "ranges", "reason", "stream"]
    assert described["max_active_runs"] == 1
    assert described["catchup"] is False
    assert {"tidemark", "persist", "telemetry"} <= set(described["tags"])
    assert "telemetry" in described["doc_md"]
    assert (described["conn_id"], described["stream"]) == ("spark_default", "telemetry")


@pytest.mark.parametrize("dag_file", DAG_FILES, ids=[path.stem for path in DAG_FILES])
def test_parsing_starts_no_spark_and_opens_no_kafka_client(airflow_environment, dag_file):
    probe = (
        "import runpy, sys\n"
        f"runpy.run_path({str(dag_file)!r})\n"
        "print(','.join(m for m in ('pyspark', 'confluent_kafka', 'delta') if m in sys.modules))\n"
    )
    result = run_python(airflow_environment, probe)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "", f"parsing the DAG file imported {result.stdout.strip()}"


def test_a_bad_config_fails_parsing_naming_the_key(airflow_environment, tmp_path):
    bad = tmp_path / "streams.yaml"
    bad.write_text((REPO / "conf" / "streams.yaml").read_text().replace("max_drift: 15m", "max_drift: soon"))
    result = run_python({**airflow_environment, "TIDEMARK_CONF": str(bad)}, f"import runpy; runpy.run_path({str(DAG_FILE)!r})")
    assert result.returncode != 0
    assert "streams.telemetry.event_time.max_drift" in result.stderr
