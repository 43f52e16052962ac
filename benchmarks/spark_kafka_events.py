"""Spark's own Kafka connector into tidemark's events layout, for the peer (b) and the write
ceiling (d) of the catch-up benchmark: they write the same table as the persist job, so their
figures compare like with like.

    Kafka row (key, value, partition, offset, timestamp)
      -> from_json(value) with the stream's payload schema
      -> the columns of tidemark.table_schemas.events_columns, in its order and types,
         to be appended partitioned by EVENTS_PARTITIONING (event_date, event_hour, UTC)

Unlike the persist job nothing is validated or routed: a value that does not parse gives a row of
nulls (event_time null, so event_date and event_hour null) instead of a quarantine row. The
benchmark's backlogs hold none; the runs count them (``unparsed``) to be sure.
"""

from __future__ import annotations

from tidemark.stream_config import PayloadSchema
from tidemark.table_schemas import events_columns

# The generator writes '2026-11-22T08:59:59.999Z'; XXX accepts the Z (as spark_kafka_watermark.py).
ISO_TIMESTAMP_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSSXXX"


def kafka_delta_session(app_name: str):
    """tidemark's own lake session (connectors.spark_session: Delta, UTC, its commit settings)
    with Spark's Kafka connector on the classpath next to Delta, so the peer and the ceiling pay
    the same commit costs as the persist job. Needs TIDEMARK_JARS (delta/ and spark-kafka/)."""
    from connectors.jars import delta_classpath, jars_root
    from connectors.spark_session import lake_spark_session

    classpath = f"{delta_classpath()}:{jars_root() / 'spark-kafka'}/*"
    return lake_spark_session(
        app_name,
        {
            "spark.driver.extraClassPath": classpath,
            "spark.executor.extraClassPath": classpath,
            # Every batch's progress is read at the end; the default keeps only the last 100.
            "spark.sql.streaming.numRecentProgressUpdates": "100000",
        },
    )


def payload_json_schema(payload: PayloadSchema) -> str:
    """The DDL from_json reads the value with: the event-time field and the typed payload fields."""
    sql_types = dict(events_columns(payload))
    event_time_type = "TIMESTAMP" if payload.event_time_format == "iso8601" else "BIGINT"  # epoch_millis
    fields = [f"`{payload.event_time_field}` {event_time_type}"]
    fields += [f"`{field.name}` {sql_types[field.name]}" for field in payload.fields]
    return ", ".join(fields)


def events_from_kafka_rows(kafka_rows, payload: PayloadSchema, batch_id):
    """The events rows of ``kafka_rows`` (a DataFrame with Spark's Kafka source columns), ready to
    append partitioned by EVENTS_PARTITIONING; ``batch_id`` is a Column (a literal for a
    micro-batch, an expression for a chunked write), written as the events' ``step_id``."""
    from pyspark.sql import functions as F

    # The JSON is parsed once into a struct, and the columns read from that struct.
    parsed = F.from_json(
        F.col("value").cast("string"), payload_json_schema(payload), {"timestampFormat": ISO_TIMESTAMP_FORMAT}
    )
    raw_event_time = F.col(f"payload.`{payload.event_time_field}`")
    event_time = raw_event_time if payload.event_time_format == "iso8601" else F.timestamp_millis(raw_event_time)
    return _events(kafka_rows, parsed, payload, batch_id, event_time)


def events_from_avro_kafka_rows(kafka_rows, payload: PayloadSchema, batch_id, writer_schema: str):
    """``events_from_kafka_rows`` for registry-framed Avro, as a Spark user reads it with Spark's
    own functions: the registry's 5-byte prefix cut off, the body decoded by ``from_avro`` with
    one ``writer_schema`` (its JSON). PERMISSIVE, as from_json is: a value that does not decode
    gives a row of nulls (event_time null: counted as unparsed)."""
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    body = F.expr("substring(value, 6, length(value) - 5)")
    decoded = from_avro(body, writer_schema, {"mode": "PERMISSIVE"})
    # Avro's timestamp-millis arrives as a TIMESTAMP: no format to parse.
    return _events(kafka_rows, decoded, payload, batch_id, F.col(f"payload.`{payload.event_time_field}`"))


def _events(kafka_rows, payload_struct, payload: PayloadSchema, batch_id, event_time):
    """The events columns of ``kafka_rows`` whose value ``payload_struct`` decodes, in
    events_columns' order and types, so the table has tidemark's schema exactly."""
    from pyspark.sql import functions as F

    decoded = kafka_rows.select(
        "partition", "offset", "timestamp", "key", batch_id.alias("batch_id"), payload_struct.alias("payload")
    )
    built = {
        "source_partition": F.col("partition"),
        "source_offset": F.col("offset"),
        "log_timestamp": F.col("timestamp"),
        "event_time": event_time,
        "record_key": F.col("key"),
        "record_headers": F.lit(None),  # the peer reads no headers (its includeHeaders is off)
        **{field.name: F.col(f"payload.`{field.name}`") for field in payload.fields},
        "step_id": F.col("batch_id"),  # the events column that was batch_id before issue 26
        "event_date": F.to_date(event_time),
        "event_hour": F.hour(event_time),
    }
    return decoded.select(*[built[name].cast(sql_type).alias(name) for name, sql_type in events_columns(payload)])
