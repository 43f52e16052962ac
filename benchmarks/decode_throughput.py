"""Decode alone, per core: the same telemetry records as JSON, registry-framed Avro and
registry-framed Protobuf, through tidemark's record decoder (tidemark.record_decoder.RecordDecoder,
the steps tidemark.avro_documents.AvroDocuments and tidemark.protobuf_documents.ProtobufDocuments),
in one thread. No Kafka, no Spark, no writing: what a
Python worker spends per record on the format.

    .venv/bin/python benchmarks/decode_throughput.py [--records 200000] [--rounds 3]

The writer schemas come from memory (a registry client caches them per worker: asking is not
part of decoding a record). Each format is decoded ``--rounds`` times, alternating, and the best
round is kept (the machine is shared). Prints records/s and MB/s of values per format and the
ratios Avro ÷ JSON and Protobuf ÷ JSON measured in the same run, and writes benchmarks/results/decode_throughput.json.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PROTO = """syntax = "proto3";
import "google/protobuf/timestamp.proto";
message Telemetry {
  string device_id = 1;
  google.protobuf.Timestamp event_time = 2;
  double lat = 3;
  double lon = 4;
  int32 battery = 5;
}
"""
SCHEMA = {
    "type": "record",
    "name": "Telemetry",
    "fields": [
        {"name": "device_id", "type": "string"},
        {"name": "event_time", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "lat", "type": "double"},
        {"name": "lon", "type": "double"},
        {"name": "battery", "type": "int"},
    ],
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--report", default=str(REPO / "benchmarks" / "results" / "decode_throughput.json"))
    args = parser.parse_args()

    values_of, now_ms = _records(args.records)
    decoders = _decoders(now_ms)
    best: dict[str, float] = {}
    for _ in range(args.rounds):
        for name, values in values_of.items():
            decoder = decoders[name]
            started = time.perf_counter()
            for value in values:
                decoder.decode(value, now_ms)
            best[name] = min(best.get(name, float("inf")), time.perf_counter() - started)
    report = {"records": args.records, "rounds": args.rounds}
    for name, values in values_of.items():
        size = sum(len(v) for v in values)
        report[name] = {
            "seconds": round(best[name], 3),
            "records_per_second": round(args.records / best[name]),
            "mb_per_second": round(size / best[name] / 1e6, 1),
            "bytes_per_record": round(size / args.records, 1),
        }
    report["avro_over_json_records_per_second"] = round(best["json"] / best["avro"], 3)
    report["protobuf_over_json_records_per_second"] = round(best["json"] / best["protobuf"], 3)
    print(json.dumps(report, indent=2))
    Path(args.report).write_text(json.dumps(report, indent=2) + "\n")
    return 0


def _records(count: int) -> tuple[dict[str, list[bytes]], int]:
    from fastavro import parse_schema, schemaless_writer

    parsed = parse_schema(SCHEMA)
    message_class = _protobuf_schema().message_class((0,))
    now_ms = int(time.time() * 1000)
    json_values, avro_values, protobuf_values = [], [], []
    for i in range(count):
        at = now_ms - 3_600_000 + i
        record = {"device_id": f"scooter-{i % 500}", "lat": 52.0 + i % 7 / 100, "lon": 4.9, "battery": i % 100}
        iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at / 1000)) + f".{at % 1000:03d}Z"
        json_values.append(json.dumps({**record, "event_time": iso}).encode())
        body = io.BytesIO()
        schemaless_writer(body, parsed, {**record, "event_time": at})
        avro_values.append(b"\x00\x00\x00\x00\x01" + body.getvalue())
        message = message_class(**record)
        message.event_time.FromMilliseconds(at)
        protobuf_values.append(b"\x00\x00\x00\x00\x02\x00" + message.SerializeToString())
    return {"json": json_values, "avro": avro_values, "protobuf": protobuf_values}, now_ms


def _protobuf_schema():
    from tidemark.protobuf_schemas import ProtobufSchema, file_descriptor

    return ProtobufSchema([file_descriptor("telemetry.proto", PROTO)])


def _decoders(now_ms: int) -> dict:
    from fastavro import parse_schema

    from tidemark.avro_documents import AvroDocuments
    from tidemark.protobuf_documents import ProtobufDocuments
    from tidemark.record_decoder import RecordDecoder
    from tidemark.stream_config import PayloadField, PayloadSchema

    fields = (
        PayloadField("device_id", "string"),
        PayloadField("lat", "double"),
        PayloadField("lon", "double"),
        PayloadField("battery", "int"),
    )
    parsed, compiled = parse_schema(SCHEMA), _protobuf_schema()

    class InMemory:  # the registry client's cache, already warm
        def avro(self, schema_id: int):
            return parsed

        def protobuf(self, schema_id: int):
            return compiled

    json_payload = PayloadSchema(event_time_field="event_time", fields=fields)
    avro_payload = PayloadSchema(
        event_time_field="event_time", fields=fields, format="avro", registry_url="http://registry:8081"
    )
    return {
        "json": RecordDecoder(json_payload, 3_600_000),
        "avro": RecordDecoder(avro_payload, 3_600_000, AvroDocuments(InMemory())),
        "protobuf": RecordDecoder(
            PayloadSchema(
                event_time_field="event_time", fields=fields, format="protobuf", registry_url="http://registry:8081"
            ),
            3_600_000,
            ProtobufDocuments(InMemory()),
        ),
    }


if __name__ == "__main__":
    sys.exit(main())
