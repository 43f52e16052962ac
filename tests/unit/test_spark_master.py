"""What a submit adds for each kind of Spark master, and the error branches: a standalone master
that cannot be reached, cluster deploy mode for a Python job, no Delta jars to ship.

No Airflow here: tidemark_airflow.spark_master is the pure half of the operator's submit."""

from __future__ import annotations

import ast
import socket
import time
import zipfile
from pathlib import Path

import pytest

from tidemark_airflow.spark_master import (
    SHIPPED_PACKAGES,
    ClusterMaster,
    LocalMaster,
    SparkConnectionError,
    SparkMasterUnreachable,
    StandaloneMaster,
    package_code,
    spark_master,
)

REPO = Path(__file__).resolve().parents[2]
CLASSPATH = "/jars/delta/*"
JARS = [Path("/jars/delta/delta-spark_2.13-4.4.0.jar"), Path("/jars/delta/delta-storage-4.4.0.jar")]


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed again when the block ends: nothing listens


@pytest.fixture
def listening_port():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]"])
def test_a_local_master_puts_delta_on_the_one_jvm_and_ships_nothing(master, tmp_path):
    strategy = spark_master(master, None, "spark_default")
    assert strategy == LocalMaster(master)

    settings = strategy.submit_settings(CLASSPATH, JARS, REPO, tmp_path)

    assert settings.conf == {"spark.driver.extraClassPath": CLASSPATH, "spark.executor.extraClassPath": CLASSPATH}
    assert settings.py_files == () and settings.jars == ()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("master", ["yarn", "k8s://https://kubernetes.default.svc:443"])
def test_other_cluster_managers_get_the_code_and_the_jars_shipped(master, tmp_path):
    strategy = spark_master(master, "cluster", "spark_default")
    assert strategy == ClusterMaster(master)

    settings = strategy.submit_settings(CLASSPATH, JARS, REPO, tmp_path)

    assert settings.conf == {"spark.driver.extraClassPath": CLASSPATH}
    assert settings.jars == tuple(str(jar) for jar in JARS)
    assert settings.py_files == (str(tmp_path / "tidemark-code.zip"),)


def test_a_standalone_master_ships_code_and_jars_and_names_the_driver_address_it_was_reached_from(
    listening_port, tmp_path
):
    master = f"spark://127.0.0.1:{listening_port}"
    strategy = spark_master(master, "client", "spark_default")
    assert strategy == StandaloneMaster(master, conn_id="spark_default")

    settings = strategy.submit_settings(CLASSPATH, JARS, REPO, tmp_path)

    assert settings.conf == {
        "spark.driver.extraClassPath": CLASSPATH,  # the driver's JVM, here; executors get --jars
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
    }
    assert settings.jars == tuple(str(jar) for jar in JARS)
    (zip_path,) = settings.py_files
    names = zipfile.ZipFile(zip_path).namelist()
    for module in (
        "tidemark/partition_watermark.py",
        "spark_jobs/log_source/reader.py",
        "connectors/kafka_log.py",
        "connectors/jars.py",
    ):
        assert module in names
    assert not [name for name in names if name.startswith("stack/")]  # production jobs never need the dev stack
    assert not [name for name in names if "__pycache__" in name or not name.endswith(".py")]


def test_cluster_deploy_mode_on_a_standalone_master_is_refused_with_the_fix():
    with pytest.raises(SparkConnectionError) as refused:
        spark_master("spark://spark-master:7077", "cluster", "spark_default")
    message = str(refused.value)
    assert "'spark_default'" in message and "spark://spark-master:7077" in message
    assert '{"deploy-mode": "client"}' in message


def test_an_unreachable_master_is_named_with_what_to_check_within_the_timeout():
    port = _closed_port()
    started = time.monotonic()
    with pytest.raises(SparkMasterUnreachable) as unreachable:
        StandaloneMaster(f"spark://127.0.0.1:{port}", conn_id="spark_cluster").reach(timeout_s=2)
    assert time.monotonic() - started < 2

    message = str(unreachable.value)
    assert message.startswith(f"The Spark master spark://127.0.0.1:{port} cannot be reached from ")
    assert f"127.0.0.1:{port} refused the connection (nothing listens on port {port} there)" in message
    assert "Check that the master is running" in message
    assert "'spark_cluster'" in message and "7077 by default" in message
    assert f"no firewall blocks port {port}" in message


def test_an_unknown_host_says_it_does_not_resolve():
    with pytest.raises(SparkMasterUnreachable, match="the host name 'no-such-master.invalid' does not resolve"):
        StandaloneMaster("spark://no-such-master.invalid:7077").reach(timeout_s=2)


def test_a_master_that_does_not_answer_fails_after_the_timeout_not_spark_submits_minute():
    # 192.0.2.0/24 is TEST-NET-1 (RFC 5737): never routed, so the connection times out, or the
    # machine has no route at all; either way it fails within the timeout, with what to check.
    started = time.monotonic()
    with pytest.raises(SparkMasterUnreachable, match=r"spark://192\.0\.2\.1:7077 cannot be reached .*Check that"):
        StandaloneMaster("spark://192.0.2.1:7077").reach(timeout_s=1)
    assert time.monotonic() - started < 3


def test_with_standby_masters_the_first_that_answers_is_enough(listening_port):
    master = f"spark://127.0.0.1:{_closed_port()},127.0.0.1:{listening_port}"
    assert StandaloneMaster(master).reach(timeout_s=2) == "127.0.0.1"


def test_a_master_without_a_port_is_a_connection_error_that_says_what_to_set():
    with pytest.raises(
        SparkConnectionError, match=r"is not spark://HOST:PORT: set the connection's host to spark://HOST"
    ):
        StandaloneMaster("spark://spark-master").reach()


def test_a_cluster_without_delta_jars_to_ship_says_how_to_get_them(listening_port, tmp_path):
    with pytest.raises(FileNotFoundError, match=r"No Delta jars to ship .* run `tidemark jars` first"):
        StandaloneMaster(f"spark://127.0.0.1:{listening_port}").submit_settings(CLASSPATH, [], REPO, tmp_path)


def test_the_code_zip_is_the_same_for_the_same_checkout_and_refuses_a_folder_that_is_not_one(tmp_path):
    first = package_code(REPO, tmp_path / "a.zip")
    second = package_code(REPO, tmp_path / "b.zip")
    assert zipfile.ZipFile(first).namelist() == zipfile.ZipFile(second).namelist()

    with pytest.raises(FileNotFoundError, match="is not a Python package: is .* tidemark's checkout"):
        package_code(tmp_path, tmp_path / "c.zip")


def test_nothing_shipped_to_the_executors_imports_the_dev_stack():
    """Executors get SHIPPED_PACKAGES only: a module of theirs importing stack/ would fail there."""
    importing_stack = []
    for package in SHIPPED_PACKAGES:
        for source in sorted((REPO / package).rglob("*.py")):
            for node in ast.walk(ast.parse(source.read_text())):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    names = [node.module or ""]
                else:
                    continue
                if any(name == "stack" or name.startswith("stack.") for name in names):
                    importing_stack.append(str(source.relative_to(REPO)))
    assert "stack" not in SHIPPED_PACKAGES
    assert importing_stack == []
