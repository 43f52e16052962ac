"""Storage settings from the environment: what Spark gets, what delta-rs gets, what never leaks."""

from __future__ import annotations

import pytest

from connectors.lake_storage import (
    LOG_STORE,
    LakeStorageError,
    S3Access,
    delta_rs_uri,
    spark_conf,
    storage_options,
)
from stack.environment import LOOPBACK_S3_IDENTITY, embedded_environment

LOOPBACK = {
    "TIDEMARK_S3_ENDPOINT": "http://127.0.0.1:19400/",
    "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG",
    "AWS_REGION": "eu-west-1",
}


def test_every_session_commits_to_s3_and_to_local_disk_through_a_put_if_absent_store_and_checks_its_own_commits():
    conf = spark_conf({})

    assert {key: conf[key] for key in conf if key.startswith("spark.delta.logStore.")} == {
        "spark.delta.logStore.s3a.impl": "dev.tidemark.delta.S3PutIfAbsentLogStore",
        "spark.delta.logStore.s3.impl": "dev.tidemark.delta.S3PutIfAbsentLogStore",
        "spark.delta.logStore.s3n.impl": "dev.tidemark.delta.S3PutIfAbsentLogStore",
        "spark.delta.logStore.file.impl": "dev.tidemark.delta.LocalPutIfAbsentLogStore",
    }
    assert conf["spark.databricks.delta.commit.idempotencyCheck.enabled"] == "true"
    assert LOG_STORE == "dev.tidemark.delta.S3PutIfAbsentLogStore"


def test_an_s3_compatible_endpoint_is_reached_path_style_over_its_own_scheme():
    conf = spark_conf(LOOPBACK)

    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:19400"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert conf["spark.hadoop.fs.s3a.endpoint.region"] == "eu-west-1"


def test_aws_itself_needs_no_endpoint_and_defaults_to_us_east_1():
    conf = spark_conf({})

    assert "spark.hadoop.fs.s3a.endpoint" not in conf
    assert "spark.hadoop.fs.s3a.path.style.access" not in conf
    assert conf["spark.hadoop.fs.s3a.endpoint.region"] == "us-east-1"


def test_credentials_never_become_spark_settings_nor_appear_in_a_repr():
    conf = spark_conf(LOOPBACK)

    assert not [key for key, value in conf.items() if "wJalr" in value or "AKIDEXAMPLE" in value]
    assert conf["spark.hadoop.fs.s3a.aws.credentials.provider"] == (
        "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider,"
        "org.apache.hadoop.fs.s3a.auth.IAMInstanceCredentialsProvider"
    )
    assert "wJalr" not in repr(S3Access.from_environment(LOOPBACK))


def test_half_a_key_pair_is_refused_naming_the_missing_half():
    with pytest.raises(LakeStorageError, match="^AWS_SECRET_ACCESS_KEY is not set while its pair is"):
        S3Access.from_environment({"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE"})


def test_an_endpoint_without_a_scheme_is_refused():
    with pytest.raises(LakeStorageError, match="TIDEMARK_S3_ENDPOINT='127.0.0.1:19400' is not an http"):
        spark_conf({"TIDEMARK_S3_ENDPOINT": "127.0.0.1:19400"})


def test_delta_rs_reads_s3_tables_with_the_same_endpoint_region_and_credentials():
    assert storage_options("s3a://tidemark/lake/telemetry/ledger", LOOPBACK) == {
        "AWS_REGION": "eu-west-1",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:19400",
        "AWS_ALLOW_HTTP": "true",
        "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG",
    }
    assert storage_options("/checkout/.tidemark/lake/telemetry/ledger", LOOPBACK) is None


def test_hadoop_schemes_are_s3_for_delta_rs_and_local_paths_stay_as_they_are():
    assert delta_rs_uri("s3a://tidemark/lake/t/events") == "s3://tidemark/lake/t/events"
    assert delta_rs_uri("s3n://tidemark/lake") == "s3://tidemark/lake"
    assert delta_rs_uri("s3://tidemark/lake") == "s3://tidemark/lake"
    assert delta_rs_uri("/lake/t/events") == "/lake/t/events"


def test_one_setting_puts_the_embedded_lake_and_checkpoints_on_the_loopback_s3():
    env = embedded_environment(environ={"TIDEMARK_LAKE_STORE": "s3", "TIDEMARK_S3_PORT": "19500"})

    assert env["TIDEMARK_LAKE_ROOT"] == "s3a://tidemark/lake"
    assert env["TIDEMARK_CHECKPOINT_ROOT"] == "s3a://tidemark/checkpoints"
    assert env["TIDEMARK_S3_ENDPOINT"] == "http://127.0.0.1:19500"
    assert (env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]) == LOOPBACK_S3_IDENTITY


def test_the_embedded_lake_stays_on_local_disk_without_the_setting_and_hands_out_no_credentials():
    env = embedded_environment(environ={})

    assert not env["TIDEMARK_LAKE_ROOT"].startswith("s3a://")
    assert "AWS_ACCESS_KEY_ID" not in env and "TIDEMARK_S3_ENDPOINT" not in env
