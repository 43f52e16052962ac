"""The start-up check of a job's S3 storage (connectors.lake_storage_check) against the loopback S3:
a bucket that does not exist, refused credentials, an endpoint that does not answer. Each fails
in seconds, before Spark, with a message naming the bucket or endpoint and what to check."""

from __future__ import annotations

import time

import pytest
import yaml

from connectors.lake_storage import LakeStorageError
from connectors.lake_storage_check import check_s3_paths
from harness.persist_job import backfill_request_args, recovery_request_args, run_in_process, write_stream_config
from stack.ports import free_port

pytestmark = pytest.mark.integration


def test_a_bucket_that_exists_with_good_credentials_passes(loopback_s3):
    check_s3_paths(["s3a://tidemark/check/lake", "/local/checkpoints"], loopback_s3.environment)


def test_a_missing_bucket_is_named_with_what_to_check(loopback_s3):
    with pytest.raises(LakeStorageError) as error:
        check_s3_paths(["s3a://tidemark/lake", "s3a://no-such-bucket/checkpoints"], loopback_s3.environment)

    assert str(error.value).startswith(f"bucket 'no-such-bucket' does not exist at {loopback_s3.endpoint}: create it")


def test_refused_credentials_name_the_endpoint_and_the_variables(loopback_s3):
    wrong = {**loopback_s3.environment, "AWS_SECRET_ACCESS_KEY": "not-the-secret"}

    with pytest.raises(LakeStorageError) as error:
        check_s3_paths(["s3a://tidemark/lake"], wrong)

    assert str(error.value).startswith(
        f"{loopback_s3.endpoint} refused the credentials for bucket 'tidemark': check AWS_ACCESS_KEY_ID"
    )
    assert "not-the-secret" not in str(error.value)


def test_an_endpoint_that_does_not_answer_fails_within_seconds(loopback_s3):
    silent = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()

    with pytest.raises(LakeStorageError) as error:
        check_s3_paths(
            ["s3a://tidemark/lake"], {**loopback_s3.environment, "TIDEMARK_S3_ENDPOINT": silent}, timeout_s=2
        )

    assert str(error.value).startswith(
        f"the S3 endpoint {silent} does not answer (bucket 'tidemark'): check TIDEMARK_S3_ENDPOINT"
    )
    assert time.monotonic() - started < 10


# Each job's entry module and its own arguments for the test's stream: the persist job names it,
# recovery and backfill take one --request, made as their DAGs make it.
JOB_MODULES = {
    "persist": "spark_jobs.persist.job",
    "recover": "spark_jobs.replay.recover",
    "backfill": "spark_jobs.replay.backfill",
}
JOB_ARGUMENTS = {
    "persist": lambda conf: ["--stream", "telemetry"],
    "recover": lambda conf: recovery_request_args(conf, 0, "0-10"),
    "backfill": lambda conf: backfill_request_args(conf, "2026-11-25T00:00:00Z", "2026-11-25T01:00:00Z"),
}


@pytest.mark.parametrize("job", sorted(JOB_ARGUMENTS))
def test_each_job_stops_before_spark_on_a_missing_bucket(job, loopback_s3, kafka_broker, tmp_path):
    import importlib

    main = importlib.import_module(JOB_MODULES[job]).main
    topic = f"lake-storage-check-{job}"
    kafka_broker.create_topic(topic, 1)
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, 1)
    document = yaml.safe_load(conf.read_text())
    document["streams"]["telemetry"]["lake"] = {
        "root": "s3a://missing-lake/lake",
        "checkpoint_root": "s3a://missing-lake/checkpoints",
    }
    conf.write_text(yaml.safe_dump(document))
    log = tmp_path / f"{job}.log"
    started = time.monotonic()

    code = run_in_process(main, ["--conf", str(conf), *JOB_ARGUMENTS[job](conf)], log, loopback_s3.environment)

    assert code == 2
    assert f"{job}: bucket 'missing-lake' does not exist at {loopback_s3.endpoint}" in log.read_text()
    assert time.monotonic() - started < 10  # no JVM was started
