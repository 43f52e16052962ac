"""The recover DAG restarts the live job when the request says the live job was the cause
(``restart_live``), whatever the reason's prose says: a partition with a hole and a stall puts
the hole's sentence first. The DAG's own validate and short-circuit callables, fed the conf the
quality DAG triggers with; no run, no Spark."""

from __future__ import annotations

import json
from pathlib import Path

from harness.airflow_process import run_python

REPO = Path(__file__).resolve().parents[2]

_DECIDE = f"""
import json
from airflow.dag_processing.dagbag import DagBag
from expectations import stall
from expectations.check_family import Finding
from expectations.quality_result import PartitionQuality, recovery_request_json
from expectations.quality_status import QualityStatus
from expectations.quality_verdicts import recovery_request
from tidemark.offset_coverage import OffsetRange

found = [
    Finding(2, "completeness", QualityStatus.HOLE, "HOLE: 10 offsets missing", holes=(OffsetRange(10, 20),)),
    Finding(2, stall.NAME, QualityStatus.STOP, "STOP: read position stuck at offset 100 for 40m"),
]
quality = PartitionQuality(
    partition=2, status=QualityStatus.HOLE, records=0, late=0, quarantined=0, position=100, log_earliest=0,
    log_end=160, lag=60, partition_watermark_ms=None, holes=(OffsetRange(10, 20),), hole_ranges=(), lost=(),
    failed_checks=("completeness", "stall"), reason="HOLE", reasons=("HOLE", "STOP"),
)
hole_and_stop = recovery_request_json(recovery_request("telemetry", quality, found))
hole_only = {{**hole_and_stop, "reason": "a hole found by hand"}}
hole_only.pop("restart_live", None)
dag = DagBag(dag_folder={str(REPO / "dags" / "tidemark_recover.py")!r}).get_dag("tidemark_recover__telemetry")
validate = dag.get_task("validate").python_callable
decide = dag.get_task("live_job_was_the_cause").python_callable
print(json.dumps({{
    "hole_and_stop": decide(validate(params=hole_and_stop)),
    "hole_only": decide(validate(params=hole_only)),
}}))
"""


def test_a_hole_and_a_stop_restart_the_live_job_a_hole_alone_does_not(airflow_environment):
    result = run_python(airflow_environment, _DECIDE)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {"hole_and_stop": True, "hole_only": False}
