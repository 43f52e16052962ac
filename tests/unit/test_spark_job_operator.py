"""What the Spark provider's real hook runs for a tidemark task: the spark-submit command line,
recorded by a fake spark-submit on PATH (it writes its argv to a file and exits with a chosen code).

The driver's heap is tidemark's to size (the stream's row budget, or TIDEMARK_DRIVER_MEMORY): the
command line carries it as spark.driver.memory and never a --driver-memory that overrides it.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path

import pytest
from test_stream_config import ENV, _load, _shipped

REPO = Path(__file__).resolve().parents[2]
CONN_ID = "spark_fake_local"
# The telemetry stream's shipped budget (200,000 rows) needs an 896 MiB heap: the figure
# conf/streams.yaml states next to max_records_per_batch.
BUDGET_HEAP = "896m"


@pytest.fixture
def stream_conf(tmp_path) -> Path:
    """The shipped telemetry stream with persist.driver_memory set, so its size does not depend
    on this machine's memory (a set driver_memory only has to hold the budget)."""
    document = _shipped()
    document["streams"]["telemetry"]["persist"]["driver_memory"] = "3g"
    _load(tmp_path, document)  # validates it
    return tmp_path / "streams.yaml"


@pytest.fixture
def spark_submit(tmp_path, monkeypatch):
    """Install a fake ``spark-submit`` first on PATH; returns ``install(exit_code, output)``, and
    ``argv()`` reads the arguments of its last run."""
    folder = tmp_path / "bin"
    folder.mkdir()
    recorded = tmp_path / "spark-submit-argv.json"
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    monkeypatch.setenv("TIDEMARK_JARS", str(tmp_path / "jars"))
    for name, value in ENV.items():  # the lake's and the checkpoints' roots the stream names
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("TIDEMARK_DRIVER_MEMORY", raising=False)
    monkeypatch.delenv("TIDEMARK_AWS_CONN_ID", raising=False)

    class FakeSparkSubmit:
        def install(self, exit_code: int = 0, output: str = "") -> None:
            script = folder / "spark-submit"
            script.write_text(
                f"#!{sys.executable}\nimport json, sys\n"
                f"json.dump(sys.argv[1:], open({str(recorded)!r}, 'w'))\n"
                f"print({output!r})\nsys.exit({exit_code})\n"
            )
            script.chmod(0o755)

        def argv(self) -> list[str]:
            return json.loads(recorded.read_text())

    fake = FakeSparkSubmit()
    fake.install()
    return fake


def _operator(stream_conf: Path, conn_id: str = CONN_ID, **kwargs):
    from tidemark_airflow.spark_job_operator import TidemarkSparkJobOperator

    return TidemarkSparkJobOperator(
        task_id="persist",
        stream="telemetry",
        conf_path=str(stream_conf),
        job="spark_jobs/persist/job.py",
        conn_id=conn_id,
        **kwargs,
    )


def _submit(operator, arguments=("--stream", "telemetry")) -> None:
    operator.load_stream()
    operator.submit({}, list(arguments))


def _spark_properties(argv: list[str]) -> dict[str, str]:
    return dict(argv[i + 1].split("=", 1) for i, arg in enumerate(argv) if arg == "--conf")


def test_the_driver_runs_with_the_heap_sized_to_the_stream_s_budget(spark_submit, stream_conf):
    _submit(_operator(stream_conf))

    argv = spark_submit.argv()
    assert "--driver-memory" not in argv, "spark-submit's flag would override spark.driver.memory"
    assert _spark_properties(argv)["spark.driver.memory"] == BUDGET_HEAP
    assert argv[argv.index("--master") + 1] == "local[2]"
    assert argv[-3:] == [str(REPO / "spark_jobs" / "persist" / "job.py"), "--stream", "telemetry"]


def test_tidemark_driver_memory_wins_over_the_stream_s_size(spark_submit, stream_conf, monkeypatch):
    monkeypatch.setenv("TIDEMARK_DRIVER_MEMORY", "5g")

    _submit(_operator(stream_conf))

    argv = spark_submit.argv()
    assert "--driver-memory" not in argv
    assert _spark_properties(argv)["spark.driver.memory"] == "5g"


def test_the_operator_s_own_conf_wins_over_what_tidemark_derives(spark_submit, stream_conf):
    _submit(_operator(stream_conf, conf={"spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "3"}))

    properties = _spark_properties(spark_submit.argv())
    assert properties["spark.driver.memory"] == "2g"
    assert properties["spark.sql.shuffle.partitions"] == "3"
    assert properties["spark.driver.extraClassPath"] == f"{stream_conf.parent / 'jars'}/delta/*"


def test_a_driver_memory_argument_is_refused_naming_what_sizes_the_driver(stream_conf):
    with pytest.raises(ValueError, match=r"driver_memory.*persist\.driver_memory.*TIDEMARK_DRIVER_MEMORY"):
        _operator(stream_conf, driver_memory="4g")


def test_a_failed_spark_submit_fails_the_task_with_its_exit_code_and_last_output(spark_submit, stream_conf):
    from airflow.sdk.exceptions import AirflowException

    spark_submit.install(exit_code=1, output="Exception in thread main: the job could not start")

    with pytest.raises(AirflowException) as failed:
        _submit(_operator(stream_conf))

    message = str(failed.value)
    assert "Error code is: 1." in message
    assert "Exception in thread main: the job could not start" in message


def test_a_connection_that_does_not_exist_fails_the_task_naming_it(spark_submit, stream_conf):
    from airflow.sdk.exceptions import AirflowFailException

    with pytest.raises(AirflowFailException, match=r"'spark_nowhere'.*AIRFLOW_CONN_SPARK_NOWHERE"):
        _submit(_operator(stream_conf, conn_id="spark_nowhere"))

    assert not (stream_conf.parent / "spark-submit-argv.json").exists(), "nothing was submitted"


@pytest.fixture
def listening_port():
    """A port on 127.0.0.1 that accepts connections (a standalone master is reached first)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


@pytest.mark.parametrize(
    ("connection", "master"),
    [
        ({"conn_type": "spark", "host": "local[*]"}, "local[*]"),
        ({"conn_type": "spark", "host": "spark://127.0.0.1", "port": "{port}"}, "spark://127.0.0.1:{port}"),
        ({"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "client"}}, "yarn"),
    ],
    ids=["local", "standalone", "yarn"],
)
def test_the_master_tidemark_plans_for_is_the_one_the_provider_submits_to(
    spark_submit, stream_conf, monkeypatch, listening_port, connection, master
):
    connection = json.loads(json.dumps(connection).replace('"{port}"', str(listening_port)))
    master = master.format(port=listening_port)
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps(connection))
    (stream_conf.parent / "jars" / "delta").mkdir(parents=True)
    (stream_conf.parent / "jars" / "delta" / "delta-spark_2.13-4.0.0.jar").touch()  # a cluster ships them

    operator = _operator(stream_conf)
    _submit(operator)

    argv = spark_submit.argv()
    assert operator.spark_connection().master == master
    assert argv[argv.index("--master") + 1] == master
    assert ("--py-files" in argv) == (master != "local[*]"), "executors elsewhere get tidemark's code"


def _kinesis_stream_conf(tmp_path: Path, aws_conn_id: str) -> Path:
    document = _shipped()
    stream = document["streams"]["telemetry"]
    stream["persist"]["driver_memory"] = "3g"
    stream["source"] = {
        "kind": "kinesis",
        "stream": "telemetry",
        "region": "us-east-1",
        "shards": 4,
        "endpoint": "http://127.0.0.1:19450",
        "aws_conn_id": aws_conn_id,
    }
    folder = tmp_path / "kinesis"
    folder.mkdir()
    _load(folder, document)
    return folder / "streams.yaml"


def test_a_kinesis_stream_s_keys_reach_spark_submit_from_its_connection_and_never_its_command_line(
    spark_submit, tmp_path, monkeypatch
):
    key, secret = "AKIDKINESISONLY", "kinesis-secret-never-logged"
    monkeypatch.setenv("AIRFLOW_CONN_STREAM_KEYS", json.dumps({"conn_type": "aws", "login": key, "password": secret}))
    # Set then removed: monkeypatch restores the variables the operator writes (as unset).
    for name in (
        "TIDEMARK_KINESIS_ACCESS_KEY_ID",
        "TIDEMARK_KINESIS_SECRET_ACCESS_KEY",
        "TIDEMARK_KINESIS_SESSION_TOKEN",
    ):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    operator = _operator(_kinesis_stream_conf(tmp_path, "stream_keys"))
    operator.load_stream()
    operator.submit({}, ["--stream", "telemetry"])

    assert os.environ["TIDEMARK_KINESIS_ACCESS_KEY_ID"] == key  # what spark-submit inherits
    assert key not in " ".join(spark_submit.argv()) and secret not in " ".join(spark_submit.argv())


def test_a_kinesis_connection_that_does_not_exist_fails_the_task_naming_the_key(spark_submit, tmp_path):
    from airflow.sdk.exceptions import AirflowFailException

    operator = _operator(_kinesis_stream_conf(tmp_path, "no_such_connection"))
    operator.load_stream()
    with pytest.raises(AirflowFailException, match="source.aws_conn_id 'no_such_connection'"):
        operator.submit({}, ["--stream", "telemetry"])
