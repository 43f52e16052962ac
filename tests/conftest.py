"""Fixtures shared by the integration and DAG suites: the real services, started once per test session.

Each fixture owns one service, starts it on free loopback ports with its state in pytest's
temporary folder (never the developer's .tidemark/), and stops it at the end of the session.
JVM jars are the exception: they come from the checkout's .tidemark/jars (or $TIDEMARK_JARS),
so Maven downloads them once per machine, not once per session.

Add further service fixtures below, one per service.

Unit tests run first, before any service starts (services start with the first test that asks
for one): a broken unit test fails the run in a minute or two, and the run stops there rather
than spend twenty minutes on services first.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator

import pytest

from connectors.jars import ensure_jars, shared_jars_root, spark_jars
from stack.kafka_broker import KafkaBroker
from stack.loopback_kinesis import LoopbackKinesis
from stack.loopback_s3 import LoopbackS3
from stack.ports import free_port
from stack.schema_registry import SchemaRegistry
from stack.spark_standalone import SparkStandalone

# Every Spark driver a test starts as a process of its own (spark-submit from the DAGs, the
# race's drivers, the jobs a test kills) compiles with C1 only: it lives seconds to a minute, too
# short for C2's compilations to pay back their CPU on two shared cores (those files' summed time
# fell by 10-35% in a fresh-clone run). The test session's own JVM (the ``spark`` fixture, where
# the in-process jobs run for the whole session) keeps both tiers: with C1 only, those files got
# 20-120% slower. Compilation, not behaviour: what runs and what it writes are the same.
# Production and the benchmarks keep the JVM's defaults; a test run can set its own.
SHORT_LIVED_JVM = "-XX:TieredStopAtLevel=1"
os.environ.setdefault("SPARK_SUBMIT_OPTS", SHORT_LIVED_JVM)

UNIT = "tests/unit/"
# The service tests' files longer than about 25 s, longest first (per-file times of a fresh-clone
# run on 2 cores, 2026-11-28 at cbdc8f3, from .tidemark/test-results/services.xml), started before
# the others: make test runs the service tests on two workers a file at a time, and each worker
# takes the next file when it is free, so longest first leaves the two workers ending together
# (simulated on those times: 1,106 s and 1,106 s, where the eleven longest first gave 1,142 s
# and 1,070 s). The shorter files come after, in collection order, and fill in.
LONGEST_FIRST = (
    "tests/integration/test_crash_points.py",
    "tests/dags/test_kinesis_quality_loop.py",
    "tests/integration/test_claims_at_every_moment.py",
    "tests/integration/test_quality_checks.py",
    "tests/integration/test_kinesis_persist.py",
    "tests/integration/test_log_stores.py",
    "tests/integration/test_lake_on_s3.py",
    "tests/integration/test_world_faults.py",
    "tests/integration/test_transactional_and_compacted_topics.py",
    "tests/integration/test_backfill.py",
    "tests/integration/test_offline_devices_determinism.py",
    "tests/integration/test_erasure.py",
    "tests/integration/test_persist_job.py",
    "tests/dags/test_persist_on_spark_cluster.py",
    "tests/integration/test_lake_maintenance.py",
    "tests/dags/test_backfill_dag.py",
    "tests/dags/test_persist_dag_run.py",
    "tests/dags/test_alarms.py",
    "tests/integration/test_lake_aging.py",
    "tests/integration/test_exactly_once_across_jobs.py",
    "tests/integration/test_avro_payloads.py",
    "tests/integration/test_kinesis_replay.py",
    "tests/integration/test_stack.py",
    "tests/integration/test_secured_kafka.py",
    "tests/dags/test_dag_params.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """tests/unit first, then the longest service files, then the rest, each in its collected order."""

    def order(item: pytest.Item) -> tuple[bool, int]:
        path = item.nodeid.split("::", 1)[0]
        return (not path.startswith(UNIT), LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST))

    items.sort(key=order)


_failed_unit_tests: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.failed and report.nodeid.startswith(UNIT):
        _failed_unit_tests.append(report.nodeid)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Stop before the first test that needs services when a unit test failed."""
    if _failed_unit_tests and not item.nodeid.startswith(UNIT):
        pytest.exit(
            f"{len(_failed_unit_tests)} unit test(s) failed: fix them first; the service tests did not run",
            returncode=1,
        )


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """A real single-node Kafka 4.2 broker (KRaft) on 127.0.0.1, for the whole session.

    Yields a ``KafkaBroker``: ``.bootstrap`` ("127.0.0.1:PORT"), ``.sasl_bootstrap`` and
    ``.sasl_settings(mechanism)`` (its SASL_SSL listener), ``.ssl_bootstrap`` and
    ``.ssl_settings()`` (mutual TLS) and ``.create_topic(name, partitions)`` (idempotent). Topics are not auto-created; give each
    test its own topic name.
    """
    ensure_jars(shared_jars_root(), ["kafka"])  # the stack runs from the jars, it never fetches them
    port = free_port(consecutive=4)  # the broker, its controller (+ 1), its SASL_SSL (+ 2) and SSL (+ 3) listeners
    broker = KafkaBroker(
        state_dir=tmp_path_factory.mktemp("kafka-home") / "kafka",
        jars_dir=shared_jars_root(),
        port=port,
        # The same broker speaks SASL_SSL (SCRAM, PLAIN) and mutual TLS: the secured tests need no
        # broker of their own.
        sasl_port=port + 2,
        ssl_port=port + 3,
    )
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def loopback_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackS3]:
    """The loopback S3 (s3proxy 4.1.0, filesystem backend, signatures checked) on 127.0.0.1, for the whole session.

    Yields a ``LoopbackS3``: ``.endpoint``, ``.environment`` (TIDEMARK_S3_ENDPOINT and the AWS_*
    variables that reach it), ``.lake_environment(prefix)`` (that plus TIDEMARK_LAKE_ROOT and
    TIDEMARK_CHECKPOINT_ROOT under s3a://tidemark/<prefix>/: merge it into a job's environment to
    put a stream's lake and checkpoints there; give each test its own prefix), ``.filesystem()``
    (pyarrow) and ``.create_bucket(name)``.
    """
    ensure_jars(shared_jars_root(), ["s3proxy"])
    store = LoopbackS3(
        state_dir=tmp_path_factory.mktemp("s3-home") / "s3", jars_dir=shared_jars_root(), port=free_port()
    )
    store.start()
    try:
        yield store
    finally:
        store.stop()


@pytest.fixture(scope="session")
def schema_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SchemaRegistry]:
    """The stack's schema registry (Apicurio 3.0.9, in memory) on 127.0.0.1, for the whole session.

    Yields a ``SchemaRegistry``: ``.url`` (its Confluent-compatible API), ``.register(subject,
    schema)``, ``.stop()`` and ``.start()`` (its schemas do not survive a restart: register them
    again, in the same order, to get the same ids). About 2 s to start.
    """
    ensure_jars(shared_jars_root(), ["registry"])
    registry = SchemaRegistry(tmp_path_factory.mktemp("registry-home"), shared_jars_root(), free_port())
    registry.start()
    try:
        yield registry
    finally:
        registry.stop()


@pytest.fixture(scope="session")
def loopback_kinesis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackKinesis]:
    """The loopback Kinesis (moto's server) on 127.0.0.1 and a free port, for the whole session.

    Yields a ``LoopbackKinesis``: ``.endpoint``, ``.region``, ``.client()`` (boto3),
    ``.create_stream(name, shards)`` (waits until ACTIVE; give each test its own stream name:
    streams outlive tests) and ``.environment`` (TIDEMARK_KINESIS_ENDPOINT and the
    TIDEMARK_KINESIS_* keys that reach it: merge it into a process's environment).
    """
    kinesis = LoopbackKinesis(state_dir=tmp_path_factory.mktemp("kinesis-home") / "kinesis", port=free_port())
    kinesis.start()
    try:
        yield kinesis
    finally:
        kinesis.stop()


@pytest.fixture(scope="session")
def spark_on_loopback_s3(spark, loopback_s3: LoopbackS3) -> LoopbackS3:
    """The session's ``spark`` reaching the loopback S3's bucket too, so a job run in this process
    (``harness.persist_job.run_in_process`` with ``loopback_s3.lake_environment(prefix)`` as its
    environment) can put its lake and checkpoints there without a JVM of its own.

    A job's own session finds its credentials in the environment its JVM started with; this
    session's JVM started before the loopback S3 existed, so the bucket's endpoint and the
    loopback identity are set as S3A per-bucket options instead (test-only: in a job the keys
    never become a Hadoop setting). Yields the ``LoopbackS3``.
    """
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    prefix = f"fs.s3a.bucket.{loopback_s3.buckets[0]}."
    for key, value in {
        "endpoint": loopback_s3.endpoint,
        "path.style.access": "true",
        "connection.ssl.enabled": "false",
        "aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        "access.key": loopback_s3.access_key_id,
        "secret.key": loopback_s3.secret_access_key,
    }.items():
        hadoop.set(prefix + key, value)
    return loopback_s3


# Stand-ins for tidemark's packages on the Spark worker's Python path: importing one fails.
_NOT_ON_THE_WORKER = (
    "raise ImportError(\"{package} was imported from the Spark worker's own Python path: a job's executors "
    'must run the code the job ships (--py-files), as on a machine without the checkout")\n'
)


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkStandalone]:
    """A Spark standalone master and one worker (2 cores, 2 GiB) on 127.0.0.1, for the whole session.

    Yields a ``SparkStandalone``: ``.master_url`` ("spark://127.0.0.1:PORT"), ``.state()`` (the
    master's JSON: workers, active and completed applications), ``.worker_state()`` (the worker's
    executors). The worker stands for another machine: it has the venv (Java, Python and the
    project's dependencies) but not tidemark's code. The venv would find the checkout through its
    editable install, so the worker's PYTHONPATH puts packages named like tidemark's in front that
    fail on import: executors can only run the code a job ships, and a job that ships none fails.
    """
    state = tmp_path_factory.mktemp("spark-standalone")
    stand_ins = state / "not-on-the-worker"
    for package in ("tidemark", "connectors", "spark_jobs", "stack"):
        (stand_ins / package).mkdir(parents=True)
        (stand_ins / package / "__init__.py").write_text(_NOT_ON_THE_WORKER.format(package=package))
    environment = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    cluster = SparkStandalone(
        state_dir=state / "spark",
        master_port=free_port(),
        webui_port=free_port(),
        worker_webui_port=free_port(),
        cores=2,
        memory="2g",
        environment={**environment, "PYTHONPATH": str(stand_ins)},
    )
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def spark():
    """A local Spark session with Delta and Spark's Kafka source, for reading what the jobs under test wrote.

    The jobs themselves run in their own processes (as spark-submit runs them); this session
    only inspects tables. The Delta jars come from the shared jars folder, fetched once.
    """
    jars = shared_jars_root()
    ensure_jars(jars, ["delta", "spark-kafka"])
    os.environ["TIDEMARK_JARS"] = str(jars)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from connectors.spark_session import lake_spark_session

    # py4j logs at INFO while the interpreter shuts down, after pytest closed its streams.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    # Spark's own Kafka source rides along: it is the second reader that checks what the lake holds.
    # This JVM lives the whole session and runs the in-process jobs: both compiler tiers (above).
    submit_opts = os.environ.pop("SPARK_SUBMIT_OPTS", None)
    try:
        session = lake_spark_session(
            "tidemark-tests", {"spark.driver.memory": "1g", "spark.jars": spark_jars(jars, ["spark-kafka"])}
        )
    finally:
        if submit_opts is not None:
            os.environ["SPARK_SUBMIT_OPTS"] = submit_opts
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
