"""A Kinesis stream's configuration (``source.kind: kinesis``): typed values, the keys a Kafka topic
has that a stream does not, credentials refused saying where they come from, every bad value
named by its key path."""

from __future__ import annotations

import copy
from pathlib import Path

import msgspec
import pytest
import yaml

from tidemark.partition_limit import DEFAULT_MAX_PARTITIONS
from tidemark.stream_config import KafkaSource, KinesisSource, StreamConfig, StreamConfigError, load_streams

REPO = Path(__file__).resolve().parents[2]
ENV = {"TIDEMARK_LAKE_ROOT": "/lake", "TIDEMARK_CHECKPOINT_ROOT": "/checkpoints"}
KINESIS_SOURCE = {
    "kind": "kinesis",
    "stream": "scooter-telemetry",
    "region": "us-east-1",
    "shards": 8,
    "endpoint": "${TIDEMARK_KINESIS_ENDPOINT:-http://127.0.0.1:19450/}",
    "aws_conn_id": "kinesis_default",
}


def _document(source: dict | None = None) -> dict:
    """The shipped file with a second stream, ``rides``, read from Kinesis."""
    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    rides = copy.deepcopy(document["streams"]["telemetry"])
    rides["source"] = dict(KINESIS_SOURCE if source is None else source)
    rides["retention"] = "24h"
    document["streams"]["rides"] = rides
    return document


def _load(tmp_path, document, environ=ENV) -> dict[str, StreamConfig]:
    path = tmp_path / "streams.yaml"
    path.write_text(yaml.safe_dump(document))
    return load_streams(path, environ)


def _source_with(**changes) -> dict:
    source = {**KINESIS_SOURCE, **changes}
    return {key: value for key, value in source.items() if value is not None}


def test_a_kinesis_stream_beside_a_kafka_topic_is_read_as_its_own_kind(tmp_path):
    streams = _load(tmp_path, _document())

    assert isinstance(streams["telemetry"].source, KafkaSource)
    assert streams["telemetry"].source.kind == "kafka"
    assert streams["rides"].source == KinesisSource(
        stream="scooter-telemetry",
        region="us-east-1",
        shards=8,
        endpoint="http://127.0.0.1:19450",  # the default of ${...:-...}, without its trailing '/'
        aws_conn_id="kinesis_default",
    )
    assert streams["rides"].source.kind == "kinesis"
    assert streams["rides"].retention_ms == 86_400_000


def test_the_optional_keys_default_to_aws_itself_and_no_event_time_index(tmp_path):
    source = _source_with(endpoint=None, aws_conn_id=None)

    loaded = _load(tmp_path, _document(source))["rides"].source

    assert loaded.endpoint is None  # the region's AWS endpoint
    assert loaded.aws_conn_id is None  # boto3's default credential chain
    assert loaded.starting_position == "trim_horizon"
    assert loaded.log_timestamp_is_event_time is False  # arrival time, not event time
    assert loaded.max_partitions == DEFAULT_MAX_PARTITIONS
    assert loaded.read_tasks is None


def test_the_environment_points_the_stream_at_another_endpoint(tmp_path):
    environ = {**ENV, "TIDEMARK_KINESIS_ENDPOINT": "http://kinesis:19450"}

    assert _load(tmp_path, _document(), environ)["rides"].source.endpoint == "http://kinesis:19450"


def test_max_shards_is_the_partition_limit_the_jobs_read(tmp_path):
    source = _source_with(max_shards=4096, read_tasks=16, starting_position="latest", log_timestamp_is_event_time=True)

    loaded = _load(tmp_path, _document(source))["rides"].source

    assert (loaded.max_partitions, loaded.read_tasks) == (4096, 16)
    assert (loaded.starting_position, loaded.log_timestamp_is_event_time) == ("latest", True)


def test_the_typed_stream_survives_a_round_trip_through_json(tmp_path):
    stream = _load(tmp_path, _document(_source_with(max_shards=4096)))["rides"]

    encoded = msgspec.json.encode(stream)

    assert b'"kind":"kinesis"' in encoded and b'"max_shards":4096' in encoded
    assert msgspec.json.decode(encoded, type=StreamConfig) == stream


@pytest.mark.parametrize(
    "changes, message",
    [
        (
            {"region": "us-east"},
            r"source\.region: expected an AWS region code like us-east-1 or eu-west-2, got 'us-east'$",
        ),
        ({"region": None}, r"source\.region: missing required key$"),
        ({"stream": None}, r"source\.stream: missing required key$"),
        ({"stream": "scooter telemetry"}, r"source\.stream: a Kinesis stream name is 1 to 128 letters"),
        ({"stream": "x" * 129}, r"source\.stream: a Kinesis stream name is 1 to 128 letters"),
        ({"shards": 0}, r"source\.shards: expected a whole number >= 1, got 0$"),
        ({"shards": None}, r"source\.shards: missing required key$"),
        (
            {"endpoint": "127.0.0.1:19450"},
            r"source\.endpoint: expected an http\(s\) URL like http://127\.0\.0\.1:19450",
        ),
        ({"endpoint": "http://127.0.0.1:99999"}, r"source\.endpoint: expected an http\(s\) URL"),
        ({"starting_position": "earliest"}, r"source\.starting_position: expected one of latest, trim_horizon"),
        (
            {"shards": 1800, "max_shards": 1024},
            r"source\.max_shards: 1024 is below the stream's 1800 shards .*suggested: 2048$",
        ),
        ({"read_tasks": 0}, r"source\.read_tasks: 0 read tasks cannot read anything"),
        (
            {"max_shards": 8, "read_tasks": 9},
            r"source\.read_tasks: 9 read tasks cannot all be used with at most 8 shards",
        ),
        ({"aws_conn_id": ""}, r"source\.aws_conn_id: "),
    ],
)
def test_a_bad_value_fails_naming_its_key_path(tmp_path, changes, message):
    with pytest.raises(StreamConfigError, match=r"streams\.rides\." + message):
        _load(tmp_path, _document(_source_with(**changes)))


@pytest.mark.parametrize(
    "kafka_key, value", [("topic", "rides"), ("partitions", 8), ("open_transaction_timeout", "15m")]
)
def test_a_kafka_key_on_a_kinesis_stream_is_unknown_and_the_message_lists_the_kinesis_keys(tmp_path, kafka_key, value):
    expected = (
        "aws_conn_id, endpoint, kind, log_timestamp_is_event_time, max_shards, read_tasks, region, shards, "
        "starting_position, stream"
    )
    with pytest.raises(
        StreamConfigError, match=rf"streams\.rides\.source\.{kafka_key}: unknown key; expected one of {expected}$"
    ):
        _load(tmp_path, _document(_source_with(**{kafka_key: value})))


def test_a_kinesis_key_on_a_kafka_topic_is_unknown(tmp_path):
    document = _document()
    document["streams"]["telemetry"]["source"]["region"] = "us-east-1"

    with pytest.raises(StreamConfigError, match=r"streams\.telemetry\.source\.region: unknown key; expected one of "):
        _load(tmp_path, document)


@pytest.mark.parametrize(
    "key",
    [
        "access_key",
        "aws_access_key_id",
        "AWS_SECRET_ACCESS_KEY",
        "secret",
        "secret_key",
        "session_token",
        "password",
        "credentials",
    ],
)
def test_a_credential_is_refused_saying_where_credentials_come_from_and_never_shown(tmp_path, key):
    secret = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"

    with pytest.raises(StreamConfigError) as refused:
        _load(tmp_path, _document(_source_with(**{key: secret})))

    message = str(refused.value)
    assert f"streams.rides.source.{key}: credentials never go in the stream configuration" in message
    assert "aws_conn_id" in message and "AWS_ACCESS_KEY_ID" in message
    assert secret not in message


def test_an_endpoint_with_a_password_in_it_is_refused_without_showing_it(tmp_path):
    with pytest.raises(StreamConfigError) as refused:
        _load(tmp_path, _document(_source_with(endpoint="http://AKID:s3cr3t-value@127.0.0.1:19450")))

    message = str(refused.value)
    assert "streams.rides.source.endpoint: the URL holds a user name or password" in message
    assert "s3cr3t-value" not in message and "AKID" not in message


def test_a_missing_or_unknown_kind_names_both_kinds(tmp_path):
    with pytest.raises(
        StreamConfigError, match=r"streams\.rides\.source\.kind: missing required key; expected one of kafka, kinesis$"
    ):
        _load(tmp_path, _document(_source_with(kind=None)))
    with pytest.raises(
        StreamConfigError, match=r"streams\.rides\.source\.kind: expected one of kafka, kinesis, got 'kineses'$"
    ):
        _load(tmp_path, _document(_source_with(kind="kineses")))


@pytest.mark.parametrize("empty", [True, False])
def test_a_missing_or_empty_source_is_a_missing_section(tmp_path, empty):
    document = _document()
    if empty:
        document["streams"]["rides"]["source"] = None
    else:
        del document["streams"]["rides"]["source"]

    with pytest.raises(StreamConfigError, match=r"streams\.rides\.source: missing required section$"):
        _load(tmp_path, document)
