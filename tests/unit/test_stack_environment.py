"""The embedded environment: defaults, user overrides win, every Airflow key is a real one."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml

from stack.environment import embedded_environment, tidemark_home
from stack.errors import StackError

REPO = Path("/checkout")
VENV_BIN = str(Path(sys.executable).parent)


def test_defaults_put_all_state_under_the_checkout_state_folder():
    env = embedded_environment(REPO, environ={})

    assert env["TIDEMARK_HOME"] == "/checkout/.tidemark"
    assert env["TIDEMARK_CONF"] == "/checkout/conf/streams.yaml"
    assert env["TIDEMARK_LAKE_ROOT"] == "/checkout/.tidemark/lake"
    assert env["TIDEMARK_CHECKPOINT_ROOT"] == "/checkout/.tidemark/checkpoints"
    assert env["TIDEMARK_JARS"] == "/checkout/.tidemark/jars"
    assert env["AIRFLOW_HOME"] == "/checkout/.tidemark/airflow"
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == "/checkout/dags"
    assert env["AIRFLOW__CORE__PLUGINS_FOLDER"] == "/checkout/plugins"


def test_defaults_bind_every_service_to_loopback():
    env = embedded_environment(REPO, environ={})

    assert env["TIDEMARK_KAFKA_BOOTSTRAP"] == "127.0.0.1:19092"
    assert env["AIRFLOW__API__HOST"] == "127.0.0.1"
    assert env["AIRFLOW__API__PORT"] == "18080"
    assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://127.0.0.1:18080/execution/"
    assert env["SPARK_LOCAL_IP"] == "127.0.0.1"


def test_airflow_runs_local_quiet_with_examples_off_and_dags_paused_by_default():
    env = embedded_environment(REPO, environ={})

    assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
    assert env["AIRFLOW__CORE__LOAD_EXAMPLES"] == "False"
    assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"] == "admin:admin"
    assert "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION" not in env


def test_spark_connection_is_json_with_a_local_master():
    connection = json.loads(embedded_environment(REPO, environ={})["AIRFLOW_CONN_SPARK_DEFAULT"])

    assert connection == {"conn_type": "spark", "host": "local[*]"}


def test_spark_runs_this_interpreter():
    env = embedded_environment(REPO, environ={})

    assert env["PYSPARK_PYTHON"] == env["PYSPARK_DRIVER_PYTHON"] == sys.executable


def test_a_variable_the_caller_set_is_left_alone():
    env = embedded_environment(REPO, environ={"AIRFLOW_HOME": "/srv/airflow", "TIDEMARK_LAKE_ROOT": "s3a://lake"})

    assert "AIRFLOW_HOME" not in env
    assert "TIDEMARK_LAKE_ROOT" not in env
    assert env["TIDEMARK_CHECKPOINT_ROOT"] == "/checkout/.tidemark/checkpoints"


def test_an_empty_variable_counts_as_unset():
    env = embedded_environment(REPO, environ={"TIDEMARK_HOME": ""})

    assert env["TIDEMARK_HOME"] == "/checkout/.tidemark"


def test_a_moved_home_moves_everything_under_it():
    env = embedded_environment(REPO, environ={"TIDEMARK_HOME": "/data/tm"})

    assert "TIDEMARK_HOME" not in env
    assert env["TIDEMARK_LAKE_ROOT"] == "/data/tm/lake"
    assert env["TIDEMARK_JARS"] == "/data/tm/jars"
    assert env["AIRFLOW_HOME"] == "/data/tm/airflow"
    assert tidemark_home(REPO, {"TIDEMARK_HOME": "/data/tm"}) == Path("/data/tm")


def test_ports_come_from_the_two_port_settings():
    env = embedded_environment(REPO, environ={"TIDEMARK_KAFKA_PORT": "29092", "TIDEMARK_AIRFLOW_PORT": "28080"})

    assert env["TIDEMARK_KAFKA_BOOTSTRAP"] == "127.0.0.1:29092"
    assert env["AIRFLOW__API__PORT"] == "28080"
    assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://127.0.0.1:28080/execution/"


@pytest.mark.parametrize("value", ["abc", "80", "70000"])
def test_a_bad_port_is_a_clear_error(value):
    with pytest.raises(StackError, match="TIDEMARK_KAFKA_PORT"):
        embedded_environment(REPO, environ={"TIDEMARK_KAFKA_PORT": value})


def test_path_puts_the_venv_first_once():
    env = embedded_environment(REPO, environ={"PATH": os.pathsep.join(["/usr/bin", VENV_BIN, "/bin"])})

    assert env["PATH"].split(os.pathsep) == [VENV_BIN, "/usr/bin", "/bin"]


def test_reads_os_environ_by_default(monkeypatch):
    monkeypatch.setenv("TIDEMARK_KAFKA_BOOTSTRAP", "broker:9092")

    assert "TIDEMARK_KAFKA_BOOTSTRAP" not in embedded_environment(REPO)


def test_every_airflow_setting_is_a_key_of_the_installed_airflow():
    import airflow

    template = Path(airflow.__file__).parent / "config_templates" / "config.yml"
    sections = yaml.safe_load(template.read_text())
    settings = [name for name in embedded_environment(REPO, environ={}) if name.startswith("AIRFLOW__")]

    assert settings
    for name in settings:
        section, key = name.removeprefix("AIRFLOW__").lower().split("__", 1)
        assert key in (sections.get(section, {}).get("options") or {}), f"{name} is not an Airflow option"
