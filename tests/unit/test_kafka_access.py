"""Where a Kafka stream's security settings come from (tidemark.kafka_access): the Airflow
connection's librdkafka settings, found in the environment under the connection's name; never in
the stream configuration, never in a repr or a message; only the settings that secure a
connection; and the same settings handed to the executors under a name Spark redacts."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
import yaml

from connectors.spark_session import hand_connection_settings_to_workers
from tidemark.kafka_access import KafkaAccess, KafkaAccessError, settings_variable
from tidemark.log_connection import KafkaConnection
from tidemark.stream_config import StreamConfigError, load_streams

PASSWORD = "s3cr3t-Pa55w0rd-never-shown"
SCRAM = {
    "security.protocol": "SASL_SSL",
    "sasl.mechanisms": "SCRAM-SHA-512",
    "sasl.username": "tidemark",
    "sasl.password": PASSWORD,
    "ssl.ca.location": "/etc/kafka/ca.pem",
}
REPO = Path(__file__).resolve().parents[2]


def test_the_variable_is_named_after_the_connection_as_airflow_names_its_own():
    assert settings_variable("kafka_prod") == "TIDEMARK_KAFKA_CONN_KAFKA_PROD"
    assert settings_variable("msk-eu.west") == "TIDEMARK_KAFKA_CONN_MSK_EU_WEST"


def test_the_connections_settings_secure_every_client_and_are_never_shown():
    environ = {"TIDEMARK_KAFKA_CONN_KAFKA_PROD": json.dumps({**SCRAM, "bootstrap.servers": "b1:9093, b2:9093"})}
    access = KafkaConnection("b1:9093,b2:9093", "rides", kafka_conn_id="kafka_prod").access(environ)

    assert access.secured
    assert access.client_settings() == {"bootstrap.servers": "b1:9093,b2:9093", **SCRAM}
    assert access.secret_values() == (PASSWORD,)
    assert PASSWORD not in repr(access) and PASSWORD not in access.described()
    assert access.described() == "SASL_SSL SCRAM-SHA-512 as user 'tidemark' (connection 'kafka_prod')"
    # The connection's name crosses process boundaries; its settings never do.
    assert PASSWORD not in msgspec.json.encode(KafkaConnection("b1:9093", "rides", kafka_conn_id="kafka_prod")).decode()


def test_without_a_connection_the_brokers_are_spoken_to_in_plaintext():
    access = KafkaAccess.of("127.0.0.1:19092", None, {})
    assert not access.secured and access.client_settings() == {"bootstrap.servers": "127.0.0.1:19092"}


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({}, "TIDEMARK_KAFKA_CONN_KAFKA_PROD is not set"),
        ({"TIDEMARK_KAFKA_CONN_KAFKA_PROD": "{not json " + PASSWORD}, "is not JSON (its value is not shown)"),
        ({"TIDEMARK_KAFKA_CONN_KAFKA_PROD": json.dumps([PASSWORD])}, "must be a JSON object"),
        ({"TIDEMARK_KAFKA_CONN_KAFKA_PROD": json.dumps({**SCRAM, "group.id": "x"})}, "key 'group.id' is not a setting"),
        (
            {"TIDEMARK_KAFKA_CONN_KAFKA_PROD": json.dumps({**SCRAM, "bootstrap.servers": "elsewhere:9093"})},
            "bootstrap.servers differ from the stream's",
        ),
    ],
)
def test_settings_tidemark_cannot_use_fail_naming_the_connection_and_the_key_never_the_value(environ, named):
    with pytest.raises(KafkaAccessError) as refused:
        KafkaAccess.of("b1:9093", "kafka_prod", environ)
    message = str(refused.value)
    assert named in message and "'kafka_prod'" in message and PASSWORD not in message


def _document(**source_keys) -> dict:
    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    telemetry = document["streams"]["telemetry"]
    telemetry["source"].update(source_keys)
    telemetry["lake"] = {"root": "/tmp/lake", "checkpoint_root": "/tmp/checkpoints"}
    document["streams"] = {"telemetry": telemetry}
    return document


@pytest.mark.parametrize("key", ["sasl_password", "ssl_key", "security_protocol", "oauth_client_secret", "password"])
def test_a_security_key_in_the_stream_configuration_is_refused_saying_where_it_belongs(tmp_path, key):
    path = tmp_path / "streams.yaml"
    path.write_text(yaml.safe_dump(_document(**{key: PASSWORD})))
    with pytest.raises(StreamConfigError) as refused:
        load_streams(path)
    message = str(refused.value)
    assert f"streams.telemetry.source.{key}: security settings and credentials never go in the stream" in message
    assert "kafka_conn_id" in message and PASSWORD not in message


def test_the_stream_names_its_connection_and_the_connection_value_carries_the_name(tmp_path):
    path = tmp_path / "streams.yaml"
    path.write_text(yaml.safe_dump(_document(kafka_conn_id="kafka_prod")))
    source = load_streams(path)["telemetry"].source
    assert source.kafka_conn_id == "kafka_prod" and source.connection().kafka_conn_id == "kafka_prod"


def test_the_python_workers_get_the_settings_through_the_contexts_environment_never_as_a_spark_setting():
    class Context:  # the part of a SparkContext the hand-over uses
        environment: dict[str, str] = {}

    environ = {"TIDEMARK_KAFKA_CONN_KAFKA_PROD": json.dumps(SCRAM), "PATH": "/bin"}
    assert hand_connection_settings_to_workers(Context, environ) == ["TIDEMARK_KAFKA_CONN_KAFKA_PROD"]
    assert Context.environment == {"TIDEMARK_KAFKA_CONN_KAFKA_PROD": json.dumps(SCRAM)}
    assert hand_connection_settings_to_workers(Context, {"PATH": "/bin"}) == [], "nothing without a Kafka connection"


class _Connection:
    """An Airflow connection of the kafka type, as the provider stores it: everything in extra."""

    def __init__(self, extra: dict):
        self.extra_dejson = extra


def test_the_airflow_connection_is_read_through_airflow_checked_and_written_for_the_job(monkeypatch):
    from airflow.sdk import BaseHook

    from tidemark_airflow.kafka_connection import apply_kafka_connection

    connections = {"kafka_prod": _Connection(SCRAM), "kafka_odd": _Connection({**SCRAM, "linger.ms": "5"})}
    monkeypatch.setattr(BaseHook, "get_connection", classmethod(lambda cls, conn_id: connections[conn_id]))
    environ: dict[str, str] = {}

    assert apply_kafka_connection(None, "b1:9093", environ) is None and environ == {}
    assert apply_kafka_connection("kafka_prod", "b1:9093", environ) == "kafka_prod"
    assert KafkaAccess.of("b1:9093", "kafka_prod", environ).client_settings() == {
        "bootstrap.servers": "b1:9093",
        **SCRAM,
    }
    with pytest.raises(KafkaAccessError, match="key 'linger.ms'"):
        apply_kafka_connection("kafka_odd", "b1:9093", environ)
    assert "TIDEMARK_KAFKA_CONN_KAFKA_ODD" not in environ, "settings that fail the check never reach a job"


def test_msk_iam_is_tidemarks_own_method_its_keys_never_reach_librdkafka_and_each_client_gets_a_callback(monkeypatch):
    """Amazon MSK IAM cannot be reached from here: this proves the callback is built for every
    client and, called as librdkafka calls it, returns a signed token and its expiry."""
    from connectors.kafka_clients import client_settings

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEEXAMPLE00")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "example-secret-key-for-signing-only")
    msk = {"security.protocol": "SASL_SSL", "sasl.mechanisms": "OAUTHBEARER", "sasl.oauthbearer.method": "aws_msk_iam"}
    environ = {"TIDEMARK_KAFKA_CONN_MSK": json.dumps(msk)}
    access = KafkaAccess.of("b-1.tidemark.abc123.c2.kafka.eu-west-1.amazonaws.com:9098", "msk", environ)

    assert access.msk_iam_region == "eu-west-1"
    settings = client_settings(access, {"group.id": "g"})
    assert "sasl.oauthbearer.method" not in settings and settings["sasl.mechanisms"] == "OAUTHBEARER"
    token, expiry_s = settings["oauth_cb"]("")
    assert token and expiry_s > 1_700_000_000, "a signed request, valid for a while"
    # librdkafka itself calls it when the client starts (no broker needed for that).
    from confluent_kafka import Consumer

    called = []
    made = settings["oauth_cb"]
    settings["oauth_cb"] = lambda config: called.append(config) or made(config)
    consumer = Consumer({**settings, "bootstrap.servers": "127.0.0.1:9"})
    try:
        consumer.poll(0.5)
    finally:
        consumer.close()
    assert called, "the client asked the callback for its token"
    with pytest.raises(KafkaAccessError, match="needs the region"):
        _ = KafkaAccess.of("broker:9098", "msk", environ).msk_iam_region


def test_an_msk_connection_made_for_the_airflow_provider_is_msk_iam_to_tidemark_too():
    """apache-airflow-providers-apache-kafka adds its MSK IAM callback for OAUTHBEARER against
    brokers named *.kafka.<region>.amazonaws.com, with no method named: the same connection is
    MSK IAM to tidemark. OIDC against the same brokers, or OAUTHBEARER elsewhere, is not."""
    msk_host = "b-1.tidemark.abc123.c2.kafka.us-east-2.amazonaws.com:9098"
    provider_style = {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}

    def region(bootstrap: str, settings: dict) -> str | None:
        return KafkaAccess.of(bootstrap, "msk", {"TIDEMARK_KAFKA_CONN_MSK": json.dumps(settings)}).msk_iam_region

    assert region(msk_host, provider_style) == "us-east-2"
    assert region("broker.example.com:9093", provider_style) is None
    assert region(msk_host, {**provider_style, "sasl.oauthbearer.method": "oidc"}) is None
    assert region(msk_host, {**SCRAM, "security.protocol": "SASL_SSL"}) is None
