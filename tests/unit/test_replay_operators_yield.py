"""A recovery or a backfill into events that yielded to the live job's batch in flight is
rescheduled, not retried: RecoverOperator and BackfillOperator read the job's typed outcome
(exit 75, RecoveryYielded / BackfillYielded) and raise Airflow's reschedule, every
``yield_delay``, until ``max_yields``; then the task fails, naming the batch it waited for. The
job is a stand-in spark-submit that writes the outcome a yielding job writes."""

from __future__ import annotations

import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from test_spark_job_operator import CONN_ID, spark_submit, stream_conf  # noqa: F401 - fixtures

from tidemark.backfill_request import BackfillRequest
from tidemark.backfill_result import BackfillYielded, encode_backfill_outcome
from tidemark.live_batch_wait import LiveBatchYield
from tidemark.offset_coverage import OffsetRange
from tidemark.recovery_request import RecoveryRequest
from tidemark.recovery_result import RecoveryYielded, encode_recovery_outcome

YIELDED = LiveBatchYield(
    7,
    "/ck/telemetry/persist",
    {"0": ((100, 150),)},
    "the live job's run 1a2b stopped without committing the batch",
    0.4,
)


def _yielding_job(spark_submit, folder: Path, outcome: bytes) -> None:  # noqa: F811
    """spark-submit that writes ``outcome`` to the job's --result and exits 75, as a job that yielded."""
    spark_submit.install()
    outcome_file = folder / "outcome.json"
    outcome_file.write_bytes(outcome)
    script = folder / "bin" / "spark-submit"
    script.write_text(
        f"#!{sys.executable}\nimport shutil, sys\n"
        f"shutil.copy({str(outcome_file)!r}, sys.argv[sys.argv.index('--result') + 1])\nsys.exit(75)\n"
    )


def _recover(conf: Path, **kwargs):
    from tidemark_airflow.recover_operator import RecoverOperator

    request = RecoveryRequest("telemetry", 0, (OffsetRange(100, 200),), "STOP: test").to_json()
    return RecoverOperator(
        task_id="recover", stream="telemetry", conf_path=str(conf), request=request, conn_id=CONN_ID, **kwargs
    )


def _backfill(conf: Path, **kwargs):
    from tidemark_airflow.backfill_operator import BackfillOperator

    request = BackfillRequest("telemetry", 1_764_000_000_000, 1_764_003_600_000, (0,)).to_json()
    return BackfillOperator(
        task_id="backfill",
        stream="telemetry",
        conf_path=str(conf),
        request=request,
        run_name="manual__1",
        conn_id=CONN_ID,
        **kwargs,
    )


@pytest.mark.parametrize(
    ("operator", "outcome", "job"),
    [
        (_recover, encode_recovery_outcome(RecoveryYielded("telemetry", 0, "STOP: test", YIELDED)), "recovery"),
        (_backfill, encode_backfill_outcome(BackfillYielded("telemetry", "events", YIELDED)), "backfill"),
    ],
    ids=["recovery", "backfill"],
)
def test_a_yield_reschedules_the_task_until_max_yields_then_fails_it_naming_the_batch(
    operator,
    outcome,
    job,
    spark_submit,  # noqa: F811
    stream_conf,  # noqa: F811
    tmp_path,
    capsys,
):
    from airflow.sdk.exceptions import AirflowException, AirflowFailException, AirflowRescheduleException

    _yielding_job(spark_submit, tmp_path, outcome)
    before = datetime.now(UTC)
    with pytest.raises(AirflowRescheduleException) as rescheduled:
        operator(stream_conf, yield_delay=timedelta(seconds=90), max_yields=3).execute({"task_reschedule_count": 2})
    assert before + timedelta(seconds=89) <= rescheduled.value.reschedule_date <= datetime.now(UTC) + timedelta(90)
    assert f"Yielded to the live job (3 of at most 3): {YIELDED.sentence(job)}" in capsys.readouterr().out

    with pytest.raises(AirflowException) as failed:
        operator(stream_conf, yield_delay=timedelta(seconds=90), max_yields=3).execute({"task_reschedule_count": 3})
    assert not isinstance(failed.value, (AirflowRescheduleException, AirflowFailException)), "the task's retries apply"
    assert str(failed.value).startswith(f"This {job} yielded to the live job 4 times over 4 minutes")
    assert "replays batch 7" in str(failed.value)
