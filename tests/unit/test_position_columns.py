"""A stream's position columns take its position type: BIGINT Kafka offsets (unchanged, so old
lakes keep their rows), ordered text for Kinesis sequence numbers (tidemark.log_position)."""

from tidemark.log_position import KAFKA_OFFSETS, KINESIS_SEQUENCE_NUMBERS
from tidemark.planned_range import RAW_RECORD_SCHEMA, raw_record_schema
from tidemark.stream_config import PayloadField, PayloadSchema
from tidemark.table_schemas import (
    CLAIMS_COLUMNS,
    LEDGER_COLUMNS,
    QUARANTINE_COLUMNS,
    claims_columns,
    events_columns,
    late_columns,
    ledger_columns,
    quarantine_columns,
)

PAYLOAD = PayloadSchema(event_time_field="event_time", fields=(PayloadField("device", "string"),))
POSITIONS = {"source_offset", "start_offset", "end_offset", "log_end_offset"}


def _position_types(columns):
    return {sql for name, sql in columns if name in POSITIONS}


def test_a_kafka_streams_columns_are_the_ones_old_lakes_have():
    assert events_columns(PAYLOAD) == events_columns(PAYLOAD, KAFKA_OFFSETS)
    assert ledger_columns() == LEDGER_COLUMNS and claims_columns() == CLAIMS_COLUMNS
    assert quarantine_columns() == QUARANTINE_COLUMNS and raw_record_schema() == RAW_RECORD_SCHEMA
    for columns in (events_columns(PAYLOAD), LEDGER_COLUMNS, CLAIMS_COLUMNS, QUARANTINE_COLUMNS):
        assert _position_types(columns) == {"BIGINT"}


def test_a_kinesis_streams_positions_are_text_everywhere_and_nothing_else_changes():
    kinesis = KINESIS_SEQUENCE_NUMBERS
    for kafka_columns, kinesis_columns in [
        (events_columns(PAYLOAD), events_columns(PAYLOAD, kinesis)),
        (late_columns(PAYLOAD), late_columns(PAYLOAD, kinesis)),
        (QUARANTINE_COLUMNS, quarantine_columns(kinesis)),
        (LEDGER_COLUMNS, ledger_columns(kinesis)),
        (CLAIMS_COLUMNS, claims_columns(kinesis)),
    ]:
        assert _position_types(kinesis_columns) == {"STRING"}
        assert [name for name, _ in kafka_columns] == [name for name, _ in kinesis_columns]
        assert [c for c in kafka_columns if c[0] not in POSITIONS] == [
            c for c in kinesis_columns if c[0] not in POSITIONS
        ]
    raw = raw_record_schema(kinesis)
    assert "source_offset STRING" in raw and "range_end STRING" in raw and "log_end_offset STRING" in raw


def test_the_position_type_is_the_log_connections_and_travels_to_the_decode_stage():
    from spark_jobs.log_source.decode_stage import DecodeSpec
    from tidemark.log_connection import KafkaConnection, KinesisConnection

    assert KafkaConnection("127.0.0.1:9092", "rides").position_type is KAFKA_OFFSETS
    assert KinesisConnection("rides", "eu-west-1").position_type is KINESIS_SEQUENCE_NUMBERS
    payload = PayloadSchema("event_time", "iso8601", (PayloadField("device_id", "string", True),), 65_536)
    spec = DecodeSpec.from_json(DecodeSpec(payload, 1, 1, positions=KINESIS_SEQUENCE_NUMBERS).to_json())
    assert spec.positions == KINESIS_SEQUENCE_NUMBERS and "source_offset STRING" in spec.schema()
    assert "source_offset BIGINT" in DecodeSpec(payload, 1, 1).schema(), "Kafka's offsets by default"
