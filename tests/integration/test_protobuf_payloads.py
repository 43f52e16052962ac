"""Protobuf through a schema registry, end to end: a topic whose records carry a nested message and a
Timestamp event time, written in the two ways producers register a Protobuf schema, persisted by
the persist job against the stack's registry (Apicurio).

- v1 by confluent-kafka's ProtobufSerializer, which registers the schema as a base64 serialized
  descriptor and frames each value with the message index [0];
- v2 registered as .proto text, as a Java producer's serializer registers it: tidemark compiles it
  at run time; its message is the file's second, so each value carries the indexes [1]. Half of
  v2's records carry the schema id and indexes in the ``__value_schema_id`` header instead, their
  value the bare message, as newer serializers write it.

Every record has a Protobuf key (the tenant, its own schema) and a trace header: the key decodes
into its column, and the headers are kept as written, in events and in quarantine.

Every valid record lands in events once, the nested message's fields in their columns by path,
v2's new field null exactly on the v1 records; each broken record in quarantine with its reason
and its raw bytes.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime

import pytest
import yaml

from harness.persist_job import produce, run_in_process, write_stream_config
from harness.protobuf_schemas import V1, V2

pytestmark = pytest.mark.integration

MINUTE_MS = 60_000


def _protobuf_config(tmp_path, bootstrap: str, topic: str, registry_url: str):
    payload = {
        "format": "protobuf",
        "registry_url": registry_url,
        "registry_patience": "2s",
        "event_time_field": "event_time",
        "fields": {
            "device_id": {"type": "string"},
            "battery": {"type": "long"},
            "site": {"type": "string", "path": "place.site"},
            "floor": {"type": "long", "path": "place.floor"},
            "firmware": {"type": "string", "required": False},
        },
        "key_format": "protobuf",
        "key_fields": {"tenant": {"type": "string"}},
    }
    return write_stream_config(tmp_path, bootstrap, topic, 2, payload=payload, max_records_per_batch=500)


def test_a_protobuf_topic_with_a_nested_message_and_a_timestamp_event_time_two_schema_forms(
    kafka_broker, schema_registry, spark, tmp_path
):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from connectors.schema_registry_client import register_schema
    from tidemark.protobuf_schemas import ProtobufSchema, file_descriptor
    from tidemark.registry_access import RegistryAccess

    topic = "protobuf-telemetry"
    kafka_broker.create_topic(topic, 2)
    v1_class = ProtobufSchema([file_descriptor("tidemark/test/telemetry.proto", V1)]).message_class((0,))
    serializer = ProtobufSerializer(
        v1_class, SchemaRegistryClient({"url": schema_registry.url}), {"use.deprecated.format": False}
    )
    context = SerializationContext(topic, MessageField.VALUE)
    v2_id = register_schema(RegistryAccess(schema_registry.url), f"{topic}-v2", V2, schema_type="PROTOBUF")
    v2_class = ProtobufSchema([file_descriptor("v2.proto", V2)]).message_class((1,))
    v2_prefix = b"\x00" + v2_id.to_bytes(4, "big") + b"\x02\x02"  # indexes [1]: count 1, index 1 (zig-zag)
    key_text = 'syntax = "proto3";\npackage tidemark.test;\nmessage Key { string tenant = 1; }\n'
    key_id = register_schema(RegistryAccess(schema_registry.url), f"{topic}-key", key_text, schema_type="PROTOBUF")
    key_class = ProtobufSchema([file_descriptor("key.proto", key_text)]).message_class((0,))

    base = int(time.time() * 1000) - 90 * MINUTE_MS
    records, expected, offsets = [], {}, Counter()
    for i in range(300):
        at, partition = base + i * 6_000, i % 2
        schema_header = []
        if i % 3 == 0:
            message = v2_class(device_id=f"s-{i % 7}", battery=i, firmware=f"1.{i}")
            message.place.site, message.place.floor = f"site-{i % 5}", 2**40 + i
            message.event_time.FromMilliseconds(at)
            value = v2_prefix + message.SerializeToString()
            if i % 2:  # the schema in the header, the value bare
                value, schema_header = message.SerializeToString(), [("__value_schema_id", v2_prefix)]
        else:
            message = v1_class(device_id=f"s-{i % 7}", battery=i)
            message.place.site, message.place.floor = f"site-{i % 5}", i % 9
            message.event_time.FromMilliseconds(at)
            value = serializer(message, context)
        key = b"\x00" + key_id.to_bytes(4, "big") + b"\x00" + key_class(tenant=f"t-{i % 4}").SerializeToString()
        headers = [("trace_id", f"trace-{i}".encode()), *schema_header]
        expected[(partition, offsets[partition])] = (f"site-{i % 5}", at, i % 3 == 0, f"t-{i % 4}", headers)
        offsets[partition] += 1
        records.append((partition, value, at, key, headers))
    valid = records[1][1]  # a v1 record: prefix, index byte 0, message
    broken = {
        "not_registry_framed": b'{"device_id": "s-1"}',
        "truncated": b"\x00\x00\x01",
        "unknown_schema_id": b"\x00\x00\x00\x7f\xff" + valid[5:],
        # Cut inside the Timestamp: prefix 5, index 1, device_id "s-1" 5, then 4 of its 13 bytes.
        "malformed_protobuf": valid[:15],
    }
    expected_quarantine = {}
    for reason, value in broken.items():
        expected_quarantine[(1, offsets[1])] = reason
        offsets[1] += 1
        records.append((1, value, base, None, [("trace_id", reason.encode())]))
    produce(kafka_broker.bootstrap, topic, records)

    from spark_jobs.persist.job import main

    conf = _protobuf_config(tmp_path, kafka_broker.bootstrap, topic, schema_registry.url)
    arguments = ["--stream", "telemetry", "--conf", str(conf), "--mode", "available_now"]
    assert run_in_process(main, arguments, tmp_path / "persist.log") == 0, (tmp_path / "persist.log").read_text()[
        -3000:
    ]

    lake = tmp_path / "lake" / "telemetry"
    events = spark.read.format("delta").load(str(lake / "events")).collect()
    assert len(events) == len(expected) and {(r.source_partition, r.source_offset) for r in events} == set(expected)
    for row in events:
        site, at, is_v2, tenant, headers = expected[(row.source_partition, row.source_offset)]
        assert row.tenant == tenant, "the Protobuf key decoded into its column"
        assert [(h.key, bytes(h.value)) for h in row.record_headers] == headers, "the headers as written"
        assert row.site == site and row.event_time == datetime.fromtimestamp(at / 1000, UTC).replace(tzinfo=None)
        assert (row.firmware is not None) == is_v2, "the new field is null exactly on the v1 records"
    assert max(r.floor for r in events) > 2**40, "v2's widened nested field holds its longs"
    quarantine = spark.read.format("delta").load(str(lake / "quarantine")).collect()
    assert {(r.source_partition, r.source_offset): r.reason for r in quarantine} == expected_quarantine
    assert {r.reason: bytes(r.raw_value) for r in quarantine} == broken, "each with its raw bytes"
    assert {r.reason: bytes(r.record_headers[0].value) for r in quarantine} == {r: r.encode() for r in broken}


def test_the_generator_writes_protobuf_that_tidemark_reads_back_through_the_registry(
    kafka_broker, schema_registry, tmp_path
):
    """The generator registers a .proto of the stream's declared fields as text and frames each
    value with the message index [0]; tidemark's decoder, asking the same registry, reads back
    the record it was given."""
    from connectors.schema_registry_client import RegistryClient
    from generator.value_encoders import value_encoder
    from tidemark.protobuf_documents import ProtobufDocuments
    from tidemark.registry_access import RegistryAccess
    from tidemark.stream_config import load_stream

    conf = _protobuf_config(tmp_path, kafka_broker.bootstrap, "protobuf-generated", schema_registry.url)
    document = yaml.safe_load(conf.read_text())
    document["streams"]["telemetry"]["payload"]["fields"] = {
        "device_id": {"type": "string"},
        "lat": {"type": "double"},
        "battery": {"type": "int"},
        "firmware": {"type": "string", "required": False},
    }
    conf.write_text(yaml.safe_dump(document))
    stream = load_stream(
        conf, "telemetry", {"TIDEMARK_LAKE_ROOT": str(tmp_path), "TIDEMARK_CHECKPOINT_ROOT": str(tmp_path)}
    )
    encode = value_encoder(stream, "protobuf-generated")
    record = {
        "device_id": "scooter-7",
        "event_time": "2026-11-28T05:00:00.123Z",
        "lat": 52.1,
        "battery": 41,
        "firmware": None,
    }
    decoded, refused = ProtobufDocuments(RegistryClient(RegistryAccess(schema_registry.url)))(encode(record))
    assert refused is None
    assert decoded == {**record, "event_time": datetime(2026, 11, 28, 5, 0, 0, 123_000, UTC)}
