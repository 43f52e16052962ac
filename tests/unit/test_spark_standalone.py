"""The standalone cluster's start-up error branches, with a stand-in spark-class (a shell script):
a port in use, a master that exits, a master that never answers. The real master and worker run
in tests/dags/test_persist_on_spark_cluster.py."""

from __future__ import annotations

import socket
import stat
from pathlib import Path

import pytest

from stack.errors import StackError
from stack.ports import free_port
from stack.spark_standalone import SparkStandalone


def _spark_home(tmp_path: Path, script: str) -> Path:
    home = tmp_path / "pyspark"
    (home / "bin").mkdir(parents=True)
    spark_class = home / "bin" / "spark-class"
    spark_class.write_text("#!/bin/sh\n" + script)
    spark_class.chmod(spark_class.stat().st_mode | stat.S_IEXEC)
    return home


def _cluster(tmp_path: Path, spark_home: Path, master_port: int | None = None) -> SparkStandalone:
    return SparkStandalone(
        state_dir=tmp_path / "spark",
        master_port=master_port or free_port(),
        webui_port=free_port(),
        worker_webui_port=free_port(),
        spark_home=spark_home,
        environment={"PATH": "/usr/bin:/bin"},
    )


def test_a_master_port_in_use_is_named_before_anything_starts(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cluster = _cluster(tmp_path, _spark_home(tmp_path, "exit 1\n"), master_port=port)

        with pytest.raises(StackError, match=rf"Port {port} on 127.0.0.1 \(Spark master\) is already in use"):
            cluster.start(timeout_s=2)
    assert not cluster.master.log_file.exists(), "nothing was launched"


def test_a_master_that_exits_at_once_fails_the_start_with_its_log(tmp_path):
    cluster = _cluster(tmp_path, _spark_home(tmp_path, 'echo "Error: JAVA_HOME is not set" >&2\nexit 1\n'))

    with pytest.raises(StackError, match=r"(?s)The spark-master exited during start-up .*JAVA_HOME is not set"):
        cluster.start(timeout_s=10)


def test_a_master_that_never_answers_is_stopped_and_named_after_the_timeout(tmp_path):
    cluster = _cluster(tmp_path, _spark_home(tmp_path, 'echo "starting $*"\nexec sleep 60\n'))

    with pytest.raises(StackError) as failed:
        cluster.start(timeout_s=2)
    message = str(failed.value)
    assert f"The Spark master at {cluster.webui_url}/json/ did not answer as ALIVE within 2 s" in message
    assert "starting org.apache.spark.deploy.master.Master --host 127.0.0.1" in message, "the log's tail"
    assert cluster.master.pid() is None, "the stuck master was stopped"


def test_a_missing_spark_class_says_to_reinstall_pyspark(tmp_path):
    cluster = _cluster(tmp_path, tmp_path / "empty")

    with pytest.raises(StackError, match="spark-class not found: is pyspark installed completely"):
        cluster.start(timeout_s=2)


def test_stop_of_a_cluster_that_never_started_says_so(tmp_path):
    assert _cluster(tmp_path, tmp_path / "empty").stop() == "Spark standalone is not running."


def test_the_pip_pyspark_ships_spark_class():
    from stack.spark_standalone import pyspark_home

    assert (pyspark_home() / "bin" / "spark-class").is_file()
