"""What differs between a Kafka topic and a Kinesis stream is asked of the stream's source (and of
its connection), never of ``source.kind``: each member answers for its own kind of log."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from spark_jobs.replay.recover import lost_report
from tidemark.log_position import KAFKA_OFFSETS, KINESIS_SEQUENCE_NUMBERS
from tidemark.recovery_result import RecoveryResult
from tidemark.stream_config import KafkaSource, KinesisSource, StreamConfig, load_streams

REPO = Path(__file__).resolve().parents[2]
ENV = {"TIDEMARK_LAKE_ROOT": "/lake", "TIDEMARK_CHECKPOINT_ROOT": "/checkpoints"}
KAFKA = KafkaSource(bootstrap_servers="broker-1:9092,broker-2:9092", topic="telemetry", partitions=4)
KINESIS = KinesisSource(stream="rides", region="eu-west-1", shards=2, aws_conn_id="kinesis_default")
LOOPBACK_KINESIS = KinesisSource(stream="rides", region="us-east-1", shards=8, endpoint="http://127.0.0.1:19450")


@pytest.fixture(scope="module")
def streams(tmp_path_factory) -> dict[str, StreamConfig]:
    """The shipped file (telemetry: a Kafka topic of 4 partitions) and ``rides``, its copy read
    from a Kinesis stream of 8 shards."""
    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    rides = copy.deepcopy(document["streams"]["telemetry"])
    rides["source"] = {"kind": "kinesis", "stream": "scooter-telemetry", "region": "us-east-1", "shards": 8}
    rides["retention"] = "24h"
    document["streams"]["rides"] = rides
    path = tmp_path_factory.mktemp("conf") / "streams.yaml"
    path.write_text(yaml.safe_dump(document))
    return load_streams(path, ENV)


def test_the_position_type_is_the_sources_own():
    assert KAFKA.position_type is KAFKA_OFFSETS and KAFKA.connection().position_type is KAFKA_OFFSETS
    assert KINESIS.position_type is KINESIS_SEQUENCE_NUMBERS
    assert KINESIS.connection().position_type is KINESIS_SEQUENCE_NUMBERS


def test_only_a_kinesis_source_names_an_aws_connection():
    assert KAFKA.aws_conn_id is None
    assert KINESIS.aws_conn_id == "kinesis_default"
    assert LOOPBACK_KINESIS.aws_conn_id is None  # boto3's default chain


def test_the_address_says_where_a_client_reaches_the_log():
    assert KAFKA.address == "broker-1:9092,broker-2:9092"
    assert KINESIS.address == "Kinesis stream 'rides' at AWS eu-west-1"
    assert LOOPBACK_KINESIS.address == "Kinesis stream 'rides' at http://127.0.0.1:19450"


def test_the_log_is_created_with_the_configured_partitions_or_shards():
    assert KAFKA.created_partitions == 4
    assert KINESIS.created_partitions == 2
    assert LOOPBACK_KINESIS.created_partitions == 8


def test_the_embedded_service_standing_in_for_the_log_is_named_as_stack_services_names_it():
    from stack.services import SERVICES

    assert KAFKA.local_service == "kafka" and KINESIS.local_service == "kinesis"
    assert {KAFKA.local_service, KINESIS.local_service} <= set(SERVICES)


def test_only_kinesis_stamps_records_with_their_arrival():
    assert KAFKA.stamps_arrival_time is False  # the producer's CreateTime
    assert KINESIS.stamps_arrival_time is True  # ApproximateArrivalTimestamp


def test_a_topic_refuses_a_partition_outside_its_range(streams):
    telemetry = streams["telemetry"]
    assert [telemetry.partition_refusal(p) for p in (0, 3)] == [None, None]
    assert telemetry.partition_refusal(4) == "partition 4 is outside [0, 4): stream 'telemetry' has 4 partitions"
    assert telemetry.partition_refusal(-1) == "partition -1 is outside [0, 4): stream 'telemetry' has 4 partitions"


def test_a_kinesis_stream_refuses_only_a_negative_shard_number(streams):
    rides = streams["rides"]
    # Shards are numbered by their ids: the job checks one against the stream's listing.
    assert [rides.partition_refusal(p) for p in (0, 8, 4096)] == [None, None, None]
    assert rides.partition_refusal(-1) == "partition -1 is not a shard's number (shardId-000000000007 is 7)"


def test_the_connection_names_a_partition_in_a_log_lines_fields():
    assert KAFKA.connection().partition_fields(3) == {}
    assert KINESIS.connection().partition_fields(3) == {"shard_id": "shardId-000000000003"}


def test_lost_offsets_of_a_topic_are_reported_as_numbers_by_partition(streams):
    result = RecoveryResult("telemetry", 2, "test", (), 0, 0, ((100, 150), (200, 210)), (), "2026-11-22T00:00:00.000Z")

    report = lost_report(streams["telemetry"], 2, result)

    assert report == {
        "partition": 2,
        "position": "offset",
        "lost": [[100, 150], [200, 210]],
        "detail": "offsets [100, 150), [200, 210) of topic 'telemetry', partition 2 left the log (retention) before "
        "they were persisted: they cannot be recovered; every other range was",
    }
