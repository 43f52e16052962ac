"""The lake's S3 settings and a Kinesis stream's keys from Airflow AWS connections
(tidemark_airflow.aws_connection, tidemark.kinesis_access)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tidemark.kinesis_access import CREDENTIAL_VARIABLES, KinesisAccess, KinesisAccessError
from tidemark_airflow.aws_connection import (
    apply_aws_connection,
    apply_kinesis_connection,
    aws_environment,
    kinesis_environment,
)

CONNECTION = SimpleNamespace(
    login="AKIDEXAMPLE",
    password="wJalrXUtnFEMI/K7MDENG",
    host=None,
    extra_dejson={"endpoint_url": "http://127.0.0.1:19400", "region_name": "eu-west-1"},
)


def test_a_connection_in_the_amazon_providers_layout_becomes_the_variables_lake_storage_reads():
    assert aws_environment(CONNECTION) == {
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG",
        "AWS_REGION": "eu-west-1",
        "TIDEMARK_S3_ENDPOINT": "http://127.0.0.1:19400",
    }


def test_without_a_named_connection_nothing_changes():
    environ = {"AWS_REGION": "us-east-1"}

    assert apply_aws_connection(environ) is None
    assert environ == {"AWS_REGION": "us-east-1"}


def test_the_named_connection_is_read_through_airflow_and_written_into_the_environment(monkeypatch):
    from airflow.sdk import BaseHook

    asked = []
    monkeypatch.setattr(
        BaseHook, "get_connection", classmethod(lambda cls, conn_id: asked.append(conn_id) or CONNECTION)
    )
    environ = {"TIDEMARK_AWS_CONN_ID": "lake_s3"}

    assert apply_aws_connection(environ) == "lake_s3"
    assert asked == ["lake_s3"]
    assert environ["AWS_SECRET_ACCESS_KEY"] == "wJalrXUtnFEMI/K7MDENG"
    assert environ["TIDEMARK_S3_ENDPOINT"] == "http://127.0.0.1:19400"


def test_the_operator_forwards_where_the_s3_is_but_never_a_credential():
    from tidemark_airflow.spark_job_operator import _FORWARDED_ENVIRONMENT

    assert {"TIDEMARK_S3_ENDPOINT", "AWS_REGION"} <= set(_FORWARDED_ENVIRONMENT)
    assert not {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"} & set(_FORWARDED_ENVIRONMENT)


KINESIS_CONNECTION = SimpleNamespace(
    login="AKIDKINESIS",
    password="kinesis/Secret+Key",
    host=None,
    extra_dejson={"endpoint_url": "http://127.0.0.1:19450", "region_name": "eu-west-1", "aws_session_token": "tok"},
)


def test_a_kinesis_connection_becomes_the_tidemark_kinesis_variables_not_the_lakes_aws_ones():
    assert kinesis_environment(KINESIS_CONNECTION) == {
        "TIDEMARK_KINESIS_ACCESS_KEY_ID": "AKIDKINESIS",
        "TIDEMARK_KINESIS_SECRET_ACCESS_KEY": "kinesis/Secret+Key",
        "TIDEMARK_KINESIS_SESSION_TOKEN": "tok",
        "TIDEMARK_KINESIS_CONNECTION_ENDPOINT": "http://127.0.0.1:19450",
    }


def test_the_streams_connection_is_read_through_airflow_beside_the_lakes_and_the_keys_reach_the_client(monkeypatch):
    from airflow.sdk import BaseHook

    connections = {"lake_s3": CONNECTION, "rides_kinesis": KINESIS_CONNECTION}
    monkeypatch.setattr(BaseHook, "get_connection", classmethod(lambda cls, conn_id: connections[conn_id]))
    environ = {"TIDEMARK_AWS_CONN_ID": "lake_s3", "TIDEMARK_KINESIS_SESSION_TOKEN": "an earlier connection's"}
    source = SimpleNamespace(stream="rides", region="us-east-1", endpoint="http://kinesis.example:443")

    assert apply_aws_connection(environ) == "lake_s3"
    assert apply_kinesis_connection("rides_kinesis", environ) == "rides_kinesis"
    access = KinesisAccess.from_source(source, environ)

    # The lake keeps its keys; the stream has its own; the stream configuration's endpoint wins.
    assert environ["AWS_ACCESS_KEY_ID"] == "AKIDEXAMPLE"
    assert access.client_settings() == {
        "region_name": "us-east-1",
        "endpoint_url": "http://kinesis.example:443",
        "aws_access_key_id": "AKIDKINESIS",
        "aws_secret_access_key": "kinesis/Secret+Key",
        "aws_session_token": "tok",
    }
    assert "kinesis/Secret+Key" not in repr(access) and "tok" not in repr(access)
    assert access.credentials_from == "the stream's AWS connection"


def test_without_an_endpoint_in_the_stream_the_connections_is_used():
    environ = kinesis_environment(KINESIS_CONNECTION)
    source = SimpleNamespace(stream="rides", region="us-east-1", endpoint=None)

    assert KinesisAccess.from_source(source, environ).endpoint == "http://127.0.0.1:19450"


def test_a_stream_without_a_connection_changes_nothing_and_takes_boto3s_default_chain():
    environ = {"AWS_ACCESS_KEY_ID": "from-the-environment", "AWS_SECRET_ACCESS_KEY": "x"}
    source = SimpleNamespace(stream="rides", region="us-east-1", endpoint=None)

    assert apply_kinesis_connection(None, environ) is None
    assert environ == {"AWS_ACCESS_KEY_ID": "from-the-environment", "AWS_SECRET_ACCESS_KEY": "x"}
    assert KinesisAccess.from_source(source, environ).client_settings() == {"region_name": "us-east-1"}
    assert KinesisAccess.from_source(source, environ).credentials_from == "boto3's default chain"


def test_half_a_key_pair_fails_naming_the_missing_variable():
    source = SimpleNamespace(stream="rides", region="us-east-1", endpoint=None)

    with pytest.raises(KinesisAccessError, match="^TIDEMARK_KINESIS_SECRET_ACCESS_KEY is not set but its pair is"):
        KinesisAccess.from_source(source, {"TIDEMARK_KINESIS_ACCESS_KEY_ID": "AKID"})


def test_the_operator_never_forwards_a_kinesis_credential():
    from tidemark_airflow.spark_job_operator import _FORWARDED_ENVIRONMENT

    assert not set(CREDENTIAL_VARIABLES) & set(_FORWARDED_ENVIRONMENT)
