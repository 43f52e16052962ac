"""The log source's options cross into Spark as one typed value (spark_jobs.log_source.options):
what the job builds is exactly what the reader gets, and a bad value fails the query's start
naming the field. No Spark session: the DataSource is built the way Spark builds it, from options."""

from __future__ import annotations

import json

import pytest

from spark_jobs.log_source.decode_stage import DecodeSpec
from spark_jobs.log_source.options import LogSourceOptions
from spark_jobs.log_source.reader import LogReader, LogSource
from tidemark.live_routing import RoutedRange
from tidemark.log_connection import KafkaConnection, KinesisConnection
from tidemark.planned_range import RAW_RECORD_SCHEMA
from tidemark.stream_config import PayloadField, PayloadSchema

PAYLOAD = PayloadSchema("event_time", "iso8601", (PayloadField("temperature", "double", False),), 65_536)
DECODE = DecodeSpec(PAYLOAD, 300_000, 600_000, (RoutedRange(1, 10, 20, 1_763_800_000_000),))
TOPIC = KafkaConnection("broker:9092", "telemetry")
RECOVERY = LogSourceOptions(
    TOPIC,
    max_records_per_batch=500,
    feedback_dir="/tmp/feedback",
    offset_bounds={0: (5, 9), 12: (100, 250)},
    pinned_global_watermark_ms=1_763_800_000_000,
    resume_from={"topic": "telemetry", "plan_seq": 3, "partitions": {"0": {"position": 5}}},
    frozen_partitions=(2, 7),
    decode=DECODE,
    read_tasks=4,
)


def test_the_options_are_one_spark_option_and_come_back_equal():
    options = RECOVERY.to_options()
    assert list(options) == ["spec"]
    assert json.loads(options["spec"])["offset_bounds"] == {"0": [5, 9], "12": [100, 250]}
    decoded = LogSourceOptions.from_options(options)
    assert decoded == RECOVERY
    assert decoded.offset_bounds == {0: (5, 9), 12: (100, 250)}  # partitions as numbers again
    assert decoded.decode.live_routing == (RoutedRange(1, 10, 20, 1_763_800_000_000),)


def test_the_source_decodes_the_spec_once_for_its_schema_and_its_reader():
    source = LogSource(RECOVERY.to_options())
    assert source.schema() == DECODE.schema()
    reader = source.streamReader(source.schema())
    assert isinstance(reader, LogReader)
    assert reader._options is source._spec()  # one decoded value, not a parse per call
    raw = LogSource(LogSourceOptions(TOPIC).to_options())
    assert raw.schema() == RAW_RECORD_SCHEMA


@pytest.mark.parametrize(
    "change, message",
    [
        ({"max_drift_ms": 0}, "Expected `int` >= 1 - at `$.max_drift_ms`"),
        ({"starting": "newest"}, "Invalid enum value 'newest' - at `$.starting`"),
        ({"read_tasks": "4"}, "Expected `int`, got `str` - at `$.read_tasks`"),
        ({"offset_bounds": {"0": [9, 5]}}, "Option 'offset_bounds': partition 0 has no offsets in [9, 5)."),
        (
            {"connection": {"kind": "kafka", "bootstrap_servers": "b:1", "topic": ""}},
            "the Kafka connection needs 'topic'",
        ),
        ({"connection": {"kind": "pulsar", "topic": "t"}}, "Invalid value 'pulsar' - at `$.connection.kind`"),
        ({"max_records": 10}, "Object contains unknown field `max_records`"),
    ],
)
def test_a_bad_value_fails_naming_the_field(change, message):
    spec = {**json.loads(RECOVERY.to_options()["spec"]), **change}
    with pytest.raises(ValueError) as refused:
        LogSource({"spec": json.dumps(spec)}).schema()
    assert str(refused.value).startswith("Option 'spec' of tidemark_log is not a valid LogSourceOptions: ")
    assert message in str(refused.value)


def test_a_query_without_the_spec_option_is_told_how_to_pass_it():
    with pytest.raises(ValueError) as refused:
        LogSource({"topic": "telemetry"}).schema()
    assert str(refused.value) == (
        "Option 'spec' is required: tidemark_log takes its options as one JSON value; "
        "build a LogSourceOptions and pass .options(**its.to_options())."
    )


def test_a_kinesis_stream_crosses_as_the_same_options_with_its_own_connection_and_position_type():
    sequence = 49_590_338_271_490_256_608_559_692_538_361_571_095_921_575_989_136_588_898
    rides = LogSourceOptions(
        KinesisConnection("rides", "us-east-1", "http://127.0.0.1:19450", injected_throttling=0.25),
        offset_bounds={7: (sequence, sequence + 10)},
    )
    decoded = LogSourceOptions.from_options(rides.to_options())
    assert decoded == rides and decoded.offset_bounds == {7: (sequence, sequence + 10)}  # 56 digits, exact
    assert isinstance(decoded.connection, KinesisConnection)
    assert "source_offset STRING" in LogSource(rides.to_options()).schema()  # sequence keys, not BIGINT
