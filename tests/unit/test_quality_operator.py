"""QualityCheckOperator: a regular run is a plain Python child process (no spark-submit, no JVM),
a sweep goes through spark-submit; exit 2 fails the task without retries naming the problem, any
other failure as the task's retries say.

The child is the real expectations/quality_run.py where it can answer on its own (a lake with no
tables: exit 2 naming the table); elsewhere a stand-in job script records its command line and
environment, and writes the result file the operator reads back. The fake spark-submit of
test_spark_job_operator records whether spark-submit ran at all.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest
from test_spark_job_operator import CONN_ID, spark_submit, stream_conf  # noqa: F401 - fixtures

RECORDED = "job-record.json"


def _context(run_id: str = "manual__2026-11-26T08:00:00+00:00") -> dict:
    return {"dag_run": types.SimpleNamespace(run_id=run_id)}


def _operator(conf: Path, **kwargs):
    from tidemark_airflow.quality_operator import QualityCheckOperator

    return QualityCheckOperator(task_id="check", stream="telemetry", conf_path=str(conf), conn_id=CONN_ID, **kwargs)


def _stand_in_job(folder: Path, exit_code: int = 0, lines: tuple[str, ...] = ()) -> Path:
    """A job script that records argv and environment, prints ``lines``, writes a clean summary to
    its --result path when it exits 0."""
    record = folder / RECORDED
    script = folder / "stand_in_quality_run.py"
    summary = {
        "stream": "telemetry",
        "run_name": "x",
        "now_ms": 0,
        "now": "1970-01-01T00:00:00Z",
        "hours": [],
        "success": True,
        "paths": {"summary_json": "/s.json", "summary_html": "/s.html"},
    }
    script.write_text(
        "import json, os, sys\n"
        f"json.dump({{'argv': sys.argv, 'env': dict(os.environ)}}, open({str(record)!r}, 'w'))\n"
        f"for line in {list(lines)!r}:\n    print(line, file=sys.stderr if 'err' in line else sys.stdout)\n"
        f"if {exit_code} == 0:\n"
        f"    json.dump({summary!r}, open(sys.argv[sys.argv.index('--result') + 1], 'w'))\n"
        f"sys.exit({exit_code})\n"
    )
    return script


def test_a_regular_run_is_a_python_process_with_the_run_arguments_and_the_environment(
    stream_conf,  # noqa: F811
    spark_submit,  # noqa: F811
    tmp_path,
    monkeypatch,
):
    monkeypatch.setenv("TIDEMARK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TIDEMARK_KAFKA_BOOTSTRAP", "127.0.0.1:19999")
    for written in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION"):
        monkeypatch.delenv(written, raising=False)  # the operator writes them: restored after the test
    monkeypatch.setenv("TIDEMARK_AWS_CONN_ID", "lake_s3")
    monkeypatch.setenv(
        "AIRFLOW_CONN_LAKE_S3",
        json.dumps(
            {"conn_type": "aws", "login": "AKIDLAKE", "password": "lake-secret", "extra": {"region_name": "eu-west-1"}}
        ),
    )
    operator = _operator(stream_conf, hours=["2026-11-22T02:00:00Z", "2026-11-22T01:00:00Z"], env_vars={"EXTRA": "1"})
    operator.application = str(_stand_in_job(tmp_path, lines=("partition 0: OK",)))

    returned = operator.execute(_context())

    recorded = json.loads((tmp_path / RECORDED).read_text())
    argv = recorded["argv"]
    assert argv[0] == operator.application, "the job file itself, run by the Airflow worker's Python"
    reports = tmp_path / "home" / "reports"
    assert argv[1:] == [
        "--stream",
        "telemetry",
        "--conf",
        str(stream_conf),
        "--report-dir",
        str(reports),
        "--gx-dir",
        str(reports / "telemetry" / "gx"),
        "--run-name",
        "manual__2026-11-26T08:00:00+00:00.check",
        "--result",
        argv[argv.index("--result") + 1],
        "--hours",
        "2026-11-22T01:00:00Z,2026-11-22T02:00:00Z",
        "--reconcile",
    ]
    env = recorded["env"]
    assert (env["TIDEMARK_KAFKA_BOOTSTRAP"], env["EXTRA"]) == ("127.0.0.1:19999", "1")
    assert (env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], env["AWS_REGION"]) == (
        "AKIDLAKE",
        "lake-secret",
        "eu-west-1",
    ), "the lake's keys from the Airflow connection, as submit() applies them"
    assert not (tmp_path / "spark-submit-argv.json").exists(), "no spark-submit for a regular run"
    assert (returned["stream"], returned["success"], returned["hours"]) == ("telemetry", True, [])


def test_a_missing_table_fails_the_task_without_retries_naming_it(stream_conf, spark_submit, tmp_path, monkeypatch):  # noqa: F811
    """The real quality run, on a lake root with no tables: exit 2, the task fails for good."""
    from airflow.sdk.exceptions import AirflowFailException

    monkeypatch.setenv("TIDEMARK_HOME", str(tmp_path / "home"))
    operator = _operator(stream_conf)
    with pytest.raises(AirflowFailException) as raised:
        operator.execute(_context())
    message = str(raised.value)
    assert message.startswith("The quality run of stream telemetry refused to run (exit 2):")
    assert "stream 'telemetry': the events table does not exist at " in message
    assert not (tmp_path / "spark-submit-argv.json").exists()


def test_any_other_failure_fails_as_the_retries_say_with_the_last_lines(
    stream_conf, spark_submit, tmp_path, monkeypatch
):  # noqa: F811
    from airflow.sdk.exceptions import AirflowException, AirflowFailException

    from tidemark_airflow.quality_operator import TAIL_LINES

    monkeypatch.setenv("TIDEMARK_HOME", str(tmp_path / "home"))
    lines = tuple(f"line {i}" for i in range(TAIL_LINES + 5)) + ("err: the log did not answer",)
    operator = _operator(stream_conf)
    operator.application = str(_stand_in_job(tmp_path, exit_code=1, lines=lines))
    with pytest.raises(AirflowException) as raised:
        operator.execute(_context())
    assert not isinstance(raised.value, AirflowFailException), "retried as the task's retries say"
    said = str(raised.value).split("\n")
    assert said[0] == "The quality run of stream telemetry failed (exit 1):"
    assert said[1:] == list(lines[-TAIL_LINES:]), "the run's last lines, stderr among them, in order"


def test_a_sweep_still_goes_through_spark_submit(stream_conf, spark_submit, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("TIDEMARK_HOME", str(tmp_path / "home"))
    spark_submit.install(exit_code=3)
    operator = _operator(stream_conf, reconcile=False, sweep=True)
    operator.application = str(_stand_in_job(tmp_path))
    with pytest.raises(Exception, match="3"):
        operator.execute(_context())
    argv = spark_submit.argv()
    assert argv[argv.index(operator.application) + 1 :][-1] == "--sweep"
    assert not (tmp_path / RECORDED).exists(), "the job ran only inside spark-submit"


def test_a_kill_stops_the_regular_runs_child(stream_conf, tmp_path):  # noqa: F811
    import subprocess

    operator = _operator(stream_conf)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    operator._track(child)
    operator.on_kill()
    assert child.wait(timeout=10) != 0, "terminated, not left running"
