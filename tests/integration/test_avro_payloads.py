"""Avro through a schema registry, end to end: records produced by confluent-kafka's AvroSerializer
against the stack's registry (Apicurio), over two writer versions interleaved, and records broken
in each way a registry-framed value can be broken, persisted by the persist job.

v2 adds an optional field (``firmware``) and widens ``battery`` from int to long; the stream
declares ``firmware`` optional, so its column is null exactly on the v1 records. Every valid
record lands in events once; each broken one in quarantine with its reason and its raw bytes.
A registry that is down when a batch decodes fails the run and quarantines nothing; once it is
back (its schemas registered again: it keeps them in memory) the next run persists everything
exactly once.
"""

from __future__ import annotations

import json
import time
from collections import Counter

import pytest
import yaml

from harness.avro_schemas import V1, V2
from harness.persist_job import backfill_request_args, produce, run_backfill, run_in_process, write_stream_config

pytestmark = pytest.mark.integration

MINUTE_MS = 60_000


def _serializer(registry, schema: dict):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer

    client = SchemaRegistryClient({"url": registry.url})
    return AvroSerializer(client, json.dumps(schema), conf={"auto.register.schemas": True})


def _avro_config(tmp_path, bootstrap: str, topic: str, registry_url: str):
    payload = {
        "format": "avro",
        "registry_url": registry_url,
        "registry_patience": "2s",
        "event_time_field": "event_time",
        "fields": {
            "device_id": {"type": "string"},
            "battery": {"type": "long"},
            "firmware": {"type": "string", "required": False},
        },
    }
    return write_stream_config(tmp_path, bootstrap, topic, 2, payload=payload, max_records_per_batch=500)


def _persist(conf, log) -> int:
    from spark_jobs.persist.job import main

    return run_in_process(main, ["--stream", "telemetry", "--conf", str(conf), "--mode", "available_now"], log)


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))


def _rows(spark, tmp_path, table: str):
    return spark.read.format("delta").load(str(tmp_path / "lake" / "telemetry" / table)).collect()


def test_two_writer_versions_interleaved_and_each_broken_record_quarantined_with_its_reason(
    kafka_broker, schema_registry, spark, tmp_path
):
    from confluent_kafka.serialization import MessageField, SerializationContext

    topic = "avro-versions"
    kafka_broker.create_topic(topic, 2)
    context = SerializationContext(topic, MessageField.VALUE)
    v1, v2 = _serializer(schema_registry, V1), _serializer(schema_registry, V2)
    base = int(time.time() * 1000) - 90 * MINUTE_MS
    records, versions = [], {}
    for i in range(600):
        at = base + i * 6_000
        partition = i % 2
        if i % 3 == 0:  # v1 and v2 interleave within each partition
            value = v2(
                {"device_id": f"s-{i % 7}", "event_time": at, "battery": 2**33 + i, "firmware": f"1.{i}"}, context
            )
        else:
            value = v1({"device_id": f"s-{i % 7}", "event_time": at, "battery": i % 100}, context)
        versions[(partition, len([r for r in records if r[0] == partition]))] = "v2" if i % 3 == 0 else "v1"
        records.append((partition, value, at))
    good = dict(versions)
    # One of each way a framed value breaks (offsets after the good ones).
    valid = records[1][1]
    broken = {
        "not_registry_framed": b'{"device_id": "s-1"}',
        "truncated": b"\x00\x00\x01",
        "unknown_schema_id": b"\x00\x00\x00\x7f\xff" + valid[5:],
        "malformed_avro": valid[:-4],
    }
    counts = Counter(p for p, _, _ in records)
    expected_quarantine = {}
    for reason, value in broken.items():
        expected_quarantine[(1, counts[1])] = reason
        counts[1] += 1
        records.append((1, value, base + 3_600_000))
    produce(kafka_broker.bootstrap, topic, records)

    conf = _avro_config(tmp_path, kafka_broker.bootstrap, topic, schema_registry.url)
    assert _persist(conf, tmp_path / "persist.log") == 0, (tmp_path / "persist.log").read_text()[-3000:]

    events = _rows(spark, tmp_path, "events")
    assert Counter((r.source_partition, r.source_offset) for r in events).most_common(1)[0][1] == 1
    assert {(r.source_partition, r.source_offset) for r in events} == set(good)
    for row in events:  # the new column is null exactly on the v1 records
        assert (row.firmware is None) == (good[(row.source_partition, row.source_offset)] == "v1")
    assert max(r.battery for r in events) > 2**33, "the widened field holds v2's longs"
    quarantine = _rows(spark, tmp_path, "quarantine")
    assert {(r.source_partition, r.source_offset): r.reason for r in quarantine} == expected_quarantine
    assert {r.reason: bytes(r.raw_value) for r in quarantine} == broken, "each with its raw bytes"

    # A backfill of the same hours into a shadow set meets the versions in its own order and
    # writes the same rows: backfill == live across the schema change.
    hour = base - base % 3_600_000
    window = backfill_request_args(
        conf, _iso(hour), _iso(hour + 3 * 3_600_000), target="shadow", shadow_name="avro", compare=True
    )
    result = tmp_path / "backfill.json"
    assert run_backfill(conf, *window, "--result", str(result), log=tmp_path / "backfill.log") == 0
    comparison = json.loads(result.read_text())["comparison"]
    assert comparison["differing"] == [] and comparison["records_live"] == comparison["records_shadow"] == len(good)
    shadow = spark.read.format("delta").load(str(tmp_path / "lake" / "telemetry" / "shadow" / "avro" / "events"))
    columns = ["source_partition", "source_offset", "device_id", "battery", "firmware", "event_time"]
    assert sorted(tuple(r) for r in shadow.select(columns).collect()) == sorted(
        tuple(r[c] for c in columns) for r in events
    )


def test_a_registry_that_is_down_fails_the_run_and_quarantines_nothing_and_the_next_run_persists_all_once(
    kafka_broker, schema_registry, spark, tmp_path
):
    from confluent_kafka.serialization import MessageField, SerializationContext

    topic = "avro-registry-down"
    kafka_broker.create_topic(topic, 2)
    context = SerializationContext(topic, MessageField.VALUE)
    # A schema of its own: a worker that decoded another test's records keeps those schemas
    # cached, and must ask the registry for this one.
    v1 = _serializer(schema_registry, {**V1, "namespace": "tidemark.outage"})
    base = int(time.time() * 1000) - 30 * MINUTE_MS
    records = [
        (
            i % 2,
            v1({"device_id": f"s-{i % 3}", "event_time": base + i * 1_000, "battery": 5}, context),
            base + i * 1_000,
        )
        for i in range(200)
    ]
    produce(kafka_broker.bootstrap, topic, records)
    conf = _avro_config(tmp_path, kafka_broker.bootstrap, topic, schema_registry.url)
    schemas = _registered(schema_registry)
    schemas_before = len(schemas) - 1  # this test's schema is the newest

    schema_registry.stop()
    try:
        code = _persist(conf, tmp_path / "down.log")
    finally:
        schema_registry.start()
        for subject, schema in schemas:  # it keeps schemas in memory: the same ones, in the same order
            schema_registry.register(subject, schema)
    assert code == 1, "a registry that does not answer fails the run, to be retried"
    said = [line for line in (tmp_path / "down.log").read_text().splitlines() if line.startswith("persist:")]
    assert said == [
        f"persist: stream 'telemetry': the schema registry at {schema_registry.url} did not answer "
        f"(Connection refused) for schema {schemas_before + 1}, for 2 s: the batch fails and is retried, "
        "nothing is quarantined"
    ], said
    lake = tmp_path / "lake" / "telemetry"
    if (lake / "quarantine" / "_delta_log").exists():
        assert _rows(spark, tmp_path, "quarantine") == [], "nothing quarantined for an outage"

    assert _persist(conf, tmp_path / "again.log") == 0, (tmp_path / "again.log").read_text()[-3000:]
    events = _rows(spark, tmp_path, "events")
    assert sorted((r.source_partition, r.source_offset) for r in events) == sorted(
        (p, o) for p in (0, 1) for o in range(100)
    )
    assert _rows(spark, tmp_path, "quarantine") == []


def _registered(registry) -> list[tuple[str, str]]:
    """Every (subject, schema text) the registry holds, in the order of their ids."""
    import urllib.request

    held = []
    with urllib.request.urlopen(registry.url + "/subjects", timeout=10) as answer:
        subjects = json.load(answer)
    for subject in subjects:
        with urllib.request.urlopen(f"{registry.url}/subjects/{subject}/versions", timeout=10) as answer:
            for version in json.load(answer):
                with urllib.request.urlopen(f"{registry.url}/subjects/{subject}/versions/{version}", timeout=10) as got:
                    entry = json.load(got)
                held.append((entry["id"], subject, entry["schema"]))
    return [(subject, schema) for _, subject, schema in sorted(held)]


def test_the_generator_writes_the_stream_as_avro_that_a_registry_serializers_reader_reads(
    kafka_broker, schema_registry, tmp_path, capsys
):
    """The generator registers the stream's writer schema (from its declared fields) and frames
    each value as confluent-kafka's serializer does: its AvroDeserializer reads every record."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from generator.__main__ import main

    topic = "avro-generated"
    kafka_broker.create_topic(topic, 4)
    conf = _avro_config(tmp_path, kafka_broker.bootstrap, topic, schema_registry.url)
    document = yaml.safe_load(conf.read_text())
    document["streams"]["telemetry"]["source"]["partitions"] = 4
    document["streams"]["telemetry"]["payload"]["fields"] = {
        "device_id": {"type": "string"},
        "lat": {"type": "double"},
        "lon": {"type": "double"},
        "battery": {"type": "int"},
    }
    conf.write_text(yaml.safe_dump(document))
    assert main(["--conf", str(conf), "backlog", "--hours", "0.05", "--rate-scale", "0.2"]) == 0
    summary = json.loads(capsys.readouterr().out)

    deserialize = AvroDeserializer(SchemaRegistryClient({"url": schema_registry.url}))
    consumer = Consumer(
        {"bootstrap.servers": kafka_broker.bootstrap, "group.id": "avro-check", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(4)])
        read, deadline = [], time.monotonic() + 30
        while len(read) < summary["records"] and time.monotonic() < deadline:
            read += [m for m in consumer.consume(1_000, timeout=0.5) if m.error() is None]
    finally:
        consumer.close()
    assert len(read) == summary["records"] > 0
    for message in read:
        record = deserialize(message.value(), SerializationContext(topic, MessageField.VALUE))
        assert set(record) == {"event_time", "device_id", "lat", "lon", "battery"}
        assert int(record["event_time"].timestamp() * 1000) == message.timestamp()[1]
