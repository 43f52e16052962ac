"""A table whose columns follow its registry schema (``payload.columns_from: follow_registry``),
end to end against the stack's registry, Kafka, Spark and Delta.

1. v1 registered (device_id, battery int): the first persist run makes ``battery`` a column from
   the registry (only device_id is declared).
2. v2 registered (adds an optional ``firmware``): the next run adds the column in place and
   persists v2's records; firmware is null exactly on the v1 records.
3. A job whose columns come from a subject that lacks v2 (a producer registering under another
   subject) meets v2's records: the batch fails in one line, nothing is written or quarantined;
   with the right subject, the run persists every record once.
4. v3 changes ``battery`` to a string: the next run stops at start-up, in one line naming the
   field and the two versions; nothing is written.
"""

from __future__ import annotations

import io
import json
import time
from collections import Counter

import pytest
import yaml

from harness.persist_job import produce, run_in_process, write_stream_config

pytestmark = pytest.mark.integration

_IDENTITY = [
    {"name": "device_id", "type": "string"},
    {"name": "event_time", "type": {"type": "long", "logicalType": "timestamp-millis"}},
]
V1 = {"type": "record", "name": "Reading", "fields": [*_IDENTITY, {"name": "battery", "type": "int"}]}
V2 = {**V1, "fields": [*V1["fields"], {"name": "firmware", "type": ["null", "string"], "default": None}]}
V3 = {**V1, "fields": [*_IDENTITY, {"name": "battery", "type": "string"}]}


def _framed(schema_id: int, schema: dict, record: dict) -> bytes:
    from fastavro import parse_schema, schemaless_writer

    body = io.BytesIO()
    schemaless_writer(body, parse_schema(schema), record)
    return b"\x00" + schema_id.to_bytes(4, "big") + body.getvalue()


def _persist(conf, log) -> tuple[int, list[str]]:
    from spark_jobs.persist.job import main

    code = run_in_process(main, ["--stream", "telemetry", "--conf", str(conf), "--mode", "available_now"], log)
    return code, [line for line in log.read_text().splitlines() if line.startswith("persist:")]


def test_columns_follow_the_registry_and_a_change_the_table_cannot_follow_stops_in_one_line(
    kafka_broker, schema_registry, spark, tmp_path
):
    topic = "follows-registry"
    kafka_broker.create_topic(topic, 2)
    v1_id = schema_registry.register(f"{topic}-value", json.dumps(V1))
    conf = write_stream_config(tmp_path, kafka_broker.bootstrap, topic, 2)
    document = yaml.safe_load(conf.read_text())
    document["streams"]["telemetry"]["payload"] = {
        "format": "avro",
        "registry_url": schema_registry.url,
        "registry_patience": "2s",
        "event_time_field": "event_time",
        "columns_from": "follow_registry",
        "fields": {"device_id": {"type": "string"}},
    }
    conf.write_text(yaml.safe_dump(document))
    base = int(time.time() * 1000) - 60 * 60_000
    first = [
        (i % 2, _framed(v1_id, V1, {"device_id": f"d{i}", "event_time": base + i * 1000, "battery": i}), base)
        for i in range(60)
    ]
    produce(kafka_broker.bootstrap, topic, first)
    code, lines = _persist(conf, tmp_path / "persist-1.log")
    assert code == 0 and lines == [], (tmp_path / "persist-1.log").read_text()[-3000:]
    events = spark.read.format("delta").load(str(tmp_path / "lake" / "telemetry" / "events"))
    assert dict(events.dtypes)["battery"] == "int" and "firmware" not in events.columns

    # v2 adds firmware; its records go to a subject the next job is told to follow first.
    v2_id = schema_registry.register(f"{topic}-value", json.dumps(V2))
    second = [
        (
            i % 2,
            _framed(
                v2_id, V2, {"device_id": f"d{i}", "event_time": base + i * 1000, "battery": i, "firmware": f"2.{i}"}
            ),
            base,
        )
        for i in range(60, 100)
    ]
    produce(kafka_broker.bootstrap, topic, second)
    document["streams"]["telemetry"]["payload"]["registry_subject"] = "an-older-subject"
    schema_registry.register("an-older-subject", json.dumps(V1))
    conf.write_text(yaml.safe_dump(document))
    code, lines = _persist(conf, tmp_path / "persist-2.log")
    assert code == 1 and len(lines) == 1, (tmp_path / "persist-2.log").read_text()[-3000:]
    assert (
        "has field(s) 'firmware' that the running job has no column for" in lines[0]
        and "nothing is quarantined" in lines[0]
    )
    lake = tmp_path / "lake" / "telemetry"
    assert spark.read.format("delta").load(str(lake / "events")).count() == 60, "the failed batch wrote nothing"

    del document["streams"]["telemetry"]["payload"]["registry_subject"]
    conf.write_text(yaml.safe_dump(document))
    code, lines = _persist(conf, tmp_path / "persist-3.log")
    assert code == 0 and lines == [], (tmp_path / "persist-3.log").read_text()[-3000:]
    rows = spark.read.format("delta").load(str(lake / "events")).collect()
    assert Counter((r.source_partition, r.source_offset) for r in rows).most_common(1)[0][1] == 1 and len(rows) == 100
    assert all((r.firmware is None) == (int(r.device_id[1:]) < 60) for r in rows), "null exactly on v1's records"
    assert spark.read.format("delta").load(str(lake / "quarantine")).count() == 0

    # v3 makes battery a string: the next run refuses at start-up, naming the field and versions.
    schema_registry.register(f"{topic}-value", json.dumps(V3))
    code, lines = _persist(conf, tmp_path / "persist-4.log")
    assert code == 2 and len(lines) == 1, (tmp_path / "persist-4.log").read_text()[-3000:]
    assert lines[0].startswith("persist: stream 'telemetry': field 'battery' is int in schema version ")
    assert "and string in version 3" in lines[0]
