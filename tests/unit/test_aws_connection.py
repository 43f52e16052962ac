"""The lake's S3 settings from an Airflow AWS connection (tidemark_airflow.aws_connection)."""

from __future__ import annotations

from types import SimpleNamespace

from tidemark_airflow.aws_connection import apply_aws_connection, aws_environment

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
