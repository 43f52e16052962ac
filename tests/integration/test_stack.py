"""The embedded stack against the real thing: a Kafka broker and Airflow on loopback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import pytest

from connectors.jars import ensure_jars, shared_jars_root
from stack.airflow_standalone import AirflowStandalone
from stack.daemon import _group_members
from stack.errors import StackError
from stack.kafka_broker import KafkaBroker
from stack.ports import free_port

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.integration


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_start_of_a_running_broker_is_a_no_op(kafka_broker):
    pid = kafka_broker.daemon.pid()

    assert "already running" in kafka_broker.start()
    assert kafka_broker.daemon.pid() == pid


def test_records_produced_to_every_partition_are_consumed(kafka_broker):
    from confluent_kafka import Consumer, Producer

    topic = _topic("roundtrip")
    assert "created with 4 partitions" in kafka_broker.create_topic(topic, 4)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap})
    for partition in range(4):
        producer.produce(topic, value=f"record-{partition}".encode(), partition=partition)
    assert producer.flush(30) == 0

    consumer = Consumer(
        {"bootstrap.servers": kafka_broker.bootstrap, "group.id": topic, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    received: dict[int, bytes] = {}
    try:
        for _ in range(60):
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                received[message.partition()] = message.value()
            if len(received) == 4:
                break
    finally:
        consumer.close()

    assert received == {p: f"record-{p}".encode() for p in range(4)}


def test_create_topic_is_idempotent_and_rejects_another_partition_count(kafka_broker):
    topic = _topic("layout")
    kafka_broker.create_topic(topic, 2)

    assert "already exists with 2 partitions" in kafka_broker.create_topic(topic, 2)
    with pytest.raises(StackError, match="already exists with 2 partitions, not 4"):
        kafka_broker.create_topic(topic, 4)


def test_a_taken_port_names_the_port_and_the_setting(tmp_path):
    port = free_port(consecutive=2)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        broker = KafkaBroker(tmp_path / "kafka", shared_jars_root(), port)

        with pytest.raises(StackError, match=rf"Port {port} .*TIDEMARK_KAFKA_PORT"):
            broker.start()
    assert not broker.is_running()


def test_stop_is_idempotent_and_data_survives_a_restart(tmp_path):
    ensure_jars(shared_jars_root(), ["kafka"])  # the stack runs from the jars, it never fetches them
    broker = KafkaBroker(tmp_path / "kafka", shared_jars_root(), free_port(consecutive=2))
    assert broker.stop() == "Kafka is not running."
    broker.start()
    pid = broker.daemon.pid()
    broker.create_topic("kept", 3)

    assert broker.stop() == "Kafka stopped."
    assert broker.stop() == "Kafka is not running."
    assert not _group_members(pid)
    try:
        broker.start()
        assert "already exists with 3 partitions" in broker.create_topic("kept", 3)
    finally:
        broker.stop()


def _isolated_environment(tmp_path: Path, **settings: str) -> dict[str, str]:
    # The developer's shell may hold `eval "$(tidemark env)"` output; those values
    # would win over the test's and point it at the real .tidemark/.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TIDEMARK_", "AIRFLOW"))}
    env.update(TIDEMARK_HOME=str(tmp_path / "home"), TIDEMARK_JARS=str(shared_jars_root()), **settings)
    return env


def test_cli_reports_a_taken_port_in_one_line_without_traceback(tmp_path):
    port = free_port(consecutive=2)
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        result = subprocess.run(
            [sys.executable, "-m", "tidemark_cli", "up", "kafka"],
            cwd=REPO,
            env=_isolated_environment(tmp_path, TIDEMARK_KAFKA_PORT=str(port)),
            capture_output=True,
            text=True,
            timeout=60,
        )

    assert result.returncode == 1
    assert result.stderr.startswith(f"error: Port {port} on 127.0.0.1 (Kafka broker) is already in use")
    assert "Traceback" not in result.stderr


def test_cli_without_java_says_how_to_install_it(tmp_path):
    no_java = tmp_path / "bin"
    no_java.mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "tidemark_cli", "up", "kafka"],
        cwd=REPO,
        env={**_isolated_environment(tmp_path, TIDEMARK_KAFKA_PORT=str(free_port(2))), "PATH": str(no_java)},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 1
    assert "java not found" in result.stderr and "apt-get install openjdk-17-jre-headless" in result.stderr


def test_a_taken_airflow_port_names_the_port_and_the_setting(tmp_path):
    port = free_port()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        airflow = AirflowStandalone.from_environment(_isolated_environment(tmp_path, TIDEMARK_AIRFLOW_PORT=str(port)))

        with pytest.raises(StackError, match=rf"Port {port} .*TIDEMARK_AIRFLOW_PORT"):
            airflow.start()
    assert not airflow.is_running()


def test_airflow_starts_answers_a_login_and_stops_with_all_its_processes(tmp_path):
    dags = tmp_path / "dags"  # no DAGs: this test is about the services, not the project's DAGs
    dags.mkdir()
    environment = _isolated_environment(
        tmp_path, TIDEMARK_AIRFLOW_PORT=str(free_port()), AIRFLOW__CORE__DAGS_FOLDER=str(dags)
    )
    airflow = AirflowStandalone.from_environment(environment)
    assert airflow.stop() == "Airflow is not running."

    try:
        first = airflow.start(timeout_s=150)
        password = airflow.admin_password()
        # The same login line at every start (a demo of a second stream finds Airflow running).
        login = f"Login: admin / {password} (kept in {airflow.password_file})."
        assert password and first == f"Airflow started at {airflow.url}. {login}"
        assert airflow.password_file.stat().st_mode & 0o777 == 0o600
        assert airflow.start() == f"Airflow is already running at {airflow.url}. {login}"

        request = urllib.request.Request(
            airflow.url + "/auth/token",
            data=json.dumps({"username": "admin", "password": password}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 201
            assert json.load(response)["access_token"]
        pid = airflow.daemon.pid()
    finally:
        stopped = airflow.stop()

    assert stopped == "Airflow stopped."
    assert not _group_members(pid)
    assert airflow.stop() == "Airflow is not running."
