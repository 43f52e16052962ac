"""A bad DAG param fails the run before any work, naming the param: `airflow dags test` on the
recover, backfill, offline-devices, redrive, erase and accept-lost DAGs with malformed params. Every param's rule is
unit-tested (tests/unit/test_recovery_request.py, test_backfill_request.py,
test_offline_devices_request.py); this shows each DAG applies them before submitting anything.

The runs need no broker and no Spark (the stream's broker is a closed port): they share one
Airflow process."""

from __future__ import annotations

import json

import pytest

from harness.airflow_process import DagTestRun, dags_test_many
from harness.persist_job import write_stream_config

# (DAG, the param that is wrong, the run's params)
CASES = [
    ("tidemark_recover__telemetry", "partition", {"partition": 9, "ranges": "0-10", "reason": "x"}),
    ("tidemark_recover__telemetry", "ranges", {"partition": 1, "ranges": "20-10", "reason": "x"}),
    ("tidemark_recover__telemetry", "reason", {"partition": 1, "ranges": "0-10", "reason": ""}),
    (
        "tidemark_backfill__telemetry",
        "end",
        {"start": "2026-11-21T10:00:00Z", "end": "2026-11-21T09:00:00Z", "partitions": "0,7"},
    ),
    ("tidemark_offline_devices__telemetry", "start", {"start": "21 Nov 14:00", "end": "2026-11-21T20:00:00Z"}),
    (
        "tidemark_redrive__telemetry",
        "hours",
        {"reason": "missing_field", "hours": "2026-11-21T10:30Z..2026-11-21T12:00Z"},
    ),
    ("tidemark_erase__telemetry", "where", {"where": "device_id = reflect('java.lang.System')", "requested_by": "a"}),
    ("tidemark_accept_lost__telemetry", "range", {"partition": 1, "range": "70-40"}),
]


@pytest.fixture(scope="module")
def malformed_runs(airflow_environment, tmp_path_factory) -> list[DagTestRun]:
    conf = write_stream_config(tmp_path_factory.mktemp("dag-params"), "127.0.0.1:9", "unused", 4)
    environment = {**airflow_environment, "TIDEMARK_CONF": str(conf)}
    return dags_test_many(environment, [[dag_id, "--conf", json.dumps(params)] for dag_id, _, params in CASES])


@pytest.mark.parametrize(
    "case", range(len(CASES)), ids=[f"{dag_id.split('__')[0]}-{param}" for dag_id, param, _ in CASES]
)
def test_malformed_params_fail_before_any_work_naming_the_param(malformed_runs, case):
    _, param, _ = CASES[case]
    run = malformed_runs[case]
    assert run.returncode == 1, run.output[-3000:]
    assert f"param '{param}'" in run.output, run.output[-3000:]
    assert "spark-submit" not in run.output, "nothing may be submitted before the params are valid"


def test_a_familys_dags_take_the_member_as_a_param_and_refuse_any_other_before_any_work(airflow_environment, tmp_path):
    import yaml

    from tidemark.stream_families import stream_name_for
    from tidemark.topic_listing import refreshed, write_listing

    single = yaml.safe_load(write_stream_config(tmp_path, "127.0.0.1:9", "unused", 4).read_text())
    shape = single["streams"]["telemetry"]
    del shape["source"]["topic"], shape["source"]["partitions"]
    conf = tmp_path / "family.yaml"
    conf.write_text(yaml.safe_dump({"families": {"vans": {"match": r"vans\..+", **shape}}}))
    write_listing(
        tmp_path / "listings" / "vans.json",
        refreshed(None, "vans", "127.0.0.1:9", {"vans.eu": 4, "vans.us": 2}, 0, stream_name_for),
    )
    runs = dags_test_many(
        {**airflow_environment, "TIDEMARK_CONF": str(conf)},
        [
            [
                "tidemark_recover__family__vans",
                "--conf",
                json.dumps({"stream": "vans_us", "partition": 3, "ranges": "0-10", "reason": "x"}),
            ],
            [
                "tidemark_erase__family__vans",
                "--conf",
                json.dumps({"stream": "vans_eu", "where": "", "requested_by": "a"}),
            ],
            # No member named: every member's request is checked, vans_us's partitions its own.
            [
                "tidemark_backfill__family__vans",
                "--conf",
                json.dumps({"start": "2026-11-21T09:00:00Z", "end": "2026-11-21T10:00:00Z", "partitions": "3"}),
            ],
        ],
    )
    for run in runs:
        assert run.returncode == 1 and "spark-submit" not in run.output, run.output[-3000:]
    # A stream that is not a member is refused by Airflow itself (the param's enum), before the run
    # exists; tests/unit/test_family_drivers.py holds the validate task's own refusal.
    partition_of_the_member, where, backfill = runs
    # vans.us has 2 partitions: the member's own source is checked, not the family's template's.
    assert "param 'partition'" in partition_of_the_member.output, partition_of_the_member.output[-3000:]
    assert "param 'where'" in where.output, where.output[-3000:]
    assert "stream vans_us: " in backfill.output and "param 'partitions'" in backfill.output, backfill.output[-3000:]
