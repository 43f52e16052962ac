"""The Kafka source's options cross into Spark as one typed value (spark_jobs.kafka_source.options):
what the job builds is exactly what the reader gets, and a bad value fails the query's start
naming the field. No Spark session: the DataSource is built the way Spark builds it, from options."""

from __future__ import annotations

import json

import pytest

from spark_jobs.kafka_source.options import KafkaSourceOptions
from spark_jobs.kafka_source.reader import KafkaLogReader, KafkaLogSource
from spark_jobs.log_source.decode_stage import DecodeSpec
from tidemark.live_routing import RoutedRange
from tidemark.planned_range import RAW_RECORD_SCHEMA
from tidemark.stream_config import PayloadField, PayloadSchema

PAYLOAD = PayloadSchema("event_time", "iso8601", (PayloadField("temperature", "double", False),), 65_536)
DECODE = DecodeSpec(PAYLOAD, 300_000, 600_000, (RoutedRange(1, 10, 20, 1_763_800_000_000),))
RECOVERY = KafkaSourceOptions(
    "broker:9092",
    "telemetry",
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
    decoded = KafkaSourceOptions.from_options(options)
    assert decoded == RECOVERY
    assert decoded.offset_bounds == {0: (5, 9), 12: (100, 250)}  # partitions as numbers again
    assert decoded.decode.live_routing == (RoutedRange(1, 10, 20, 1_763_800_000_000),)


def test_the_source_decodes_the_spec_once_for_its_schema_and_its_reader():
    source = KafkaLogSource(RECOVERY.to_options())
    assert source.schema() == DECODE.schema()
    reader = source.streamReader(source.schema())
    assert isinstance(reader, KafkaLogReader)
    assert reader._options is source._spec()  # one decoded value, not a parse per call
    raw = KafkaLogSource(KafkaSourceOptions("broker:9092", "telemetry").to_options())
    assert raw.schema() == RAW_RECORD_SCHEMA


@pytest.mark.parametrize(
    "change, message",
    [
        ({"max_drift_ms": 0}, "Expected `int` >= 1 - at `$.max_drift_ms`"),
        ({"starting_offsets": "newest"}, "Invalid enum value 'newest' - at `$.starting_offsets`"),
        ({"read_tasks": "4"}, "Expected `int`, got `str` - at `$.read_tasks`"),
        ({"offset_bounds": {"0": [9, 5]}}, "Option 'offset_bounds': partition 0 has no offsets in [9, 5)."),
        ({"topic": ""}, "Option 'topic' is required."),
        ({"max_records": 10}, "Object contains unknown field `max_records`"),
    ],
)
def test_a_bad_value_fails_naming_the_field(change, message):
    spec = {**json.loads(RECOVERY.to_options()["spec"]), **change}
    with pytest.raises(ValueError) as refused:
        KafkaLogSource({"spec": json.dumps(spec)}).schema()
    assert str(refused.value).startswith("Option 'spec' of tidemark_kafka is not a valid KafkaSourceOptions: ")
    assert message in str(refused.value)


def test_a_query_without_the_spec_option_is_told_how_to_pass_it():
    with pytest.raises(ValueError) as refused:
        KafkaLogSource({"topic": "telemetry"}).schema()
    assert str(refused.value) == (
        "Option 'spec' is required: tidemark_kafka takes its options as one JSON value; "
        "build a KafkaSourceOptions and pass .options(**its.to_options())."
    )
