"""Decode alone, per core: the same telemetry records as JSON, registry-framed Avro and
registry-framed Protobuf, through tidemark's record decoder (tidemark.record_decoder.RecordDecoder,
the steps tidemark.avro_documents.AvroDocuments and tidemark.protobuf_documents.ProtobufDocuments),
in one thread. No Kafka, no Spark, no writing: what a
Python worker spends per record on the format.

Two measures per format:

    record   RecordDecoder.decode, one value at a time: the format's own cost.
    stage    the worker's whole decode stage (spark_jobs.log_source.decode_stage.BatchDecoder)
             over Arrow batches of raw rows of the reader's chunk (10,000 records): decoding
             (the typed paths, tidemark.typed_json and tidemark.typed_documents, then
             RecordDecoder on what they leave), routing, the per-step counts and the decoded columns. This is what a
             read task pays per record after reading.

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
    payloads, documents, decoders = _decoders(now_ms)
    best: dict[str, float] = {}
    for _ in range(args.rounds):
        for name, values in values_of.items():
            decoder = decoders[name]
            started = time.perf_counter()
            for value in values:
                decoder.decode(value, now_ms)
            best[name] = min(best.get(name, float("inf")), time.perf_counter() - started)
    batches_of = {name: _raw_batches(values, now_ms) for name, values in values_of.items()}
    stage_best: dict[str, float] = {}
    for _ in range(args.rounds):
        for name, batches in batches_of.items():
            stage = _stage(payloads[name], documents[name])
            started = time.perf_counter()
            for batch in batches:
                stage.decode(batch)
            stage_best[name] = min(stage_best.get(name, float("inf")), time.perf_counter() - started)
    report = {"records": args.records, "rounds": args.rounds, "stage_batch_records": STAGE_BATCH}
    for name, values in values_of.items():
        size = sum(len(v) for v in values)
        report[name] = {
            "seconds": round(best[name], 3),
            "records_per_second": round(args.records / best[name]),
            "mb_per_second": round(size / best[name] / 1e6, 1),
            "bytes_per_record": round(size / args.records, 1),
            "stage_seconds": round(stage_best[name], 3),
            "stage_records_per_second": round(args.records / stage_best[name]),
        }
    report["avro_over_json_records_per_second"] = round(best["json"] / best["avro"], 3)
    report["protobuf_over_json_records_per_second"] = round(best["json"] / best["protobuf"], 3)
    report["stage_avro_over_json_records_per_second"] = round(stage_best["json"] / stage_best["avro"], 3)
    report["stage_protobuf_over_json_records_per_second"] = round(stage_best["json"] / stage_best["protobuf"], 3)
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


STAGE_BATCH = 10_000  # the reader's chunk (connectors.kafka_log.read_ranges)


def _raw_batches(values: list[bytes], now_ms: int) -> list:
    """The values as the source yields them to the decode stage: Arrow batches of raw record
    rows of one partition, one aligned step, routed under a watermark an hour back."""
    import pyarrow as pa

    from spark_jobs.log_source.rows import arrow_schema
    from tidemark.log_position import KAFKA_OFFSETS
    from tidemark.planned_range import RECORD_ROW

    schema = arrow_schema(pa, KAFKA_OFFSETS)
    batches = []
    for start in range(0, len(values), STAGE_BATCH):
        chunk = values[start : start + STAGE_BATCH]
        columns = {
            "row_kind": [RECORD_ROW] * len(chunk),
            "source_partition": [0] * len(chunk),
            "source_offset": list(range(start, start + len(chunk))),
            "value": chunk,
            "read_time_ms": [now_ms] * len(chunk),
            "step_id": [0] * len(chunk),
            "global_watermark_ms": [now_ms - 3_600_000] * len(chunk),
        }
        batches.append(
            pa.RecordBatch.from_arrays(
                [pa.array(columns.get(f.name, [None] * len(chunk)), f.type) for f in schema], schema=schema
            )
        )
    return batches


def _stage(payload, documents):
    """A read task's decode stage for ``payload``, its documents step the in-memory one (the
    registry client's warm cache) instead of the one that would ask a registry."""
    from spark_jobs.log_source.decode_stage import BatchDecoder, DecodeSpec

    return BatchDecoder(DecodeSpec(payload, 3_600_000, 600_000), documents)


def _protobuf_schema():
    from tidemark.protobuf_schemas import ProtobufSchema, file_descriptor

    return ProtobufSchema([file_descriptor("telemetry.proto", PROTO)])


def _decoders(now_ms: int) -> tuple[dict, dict, dict]:
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

    payloads = {
        "json": PayloadSchema(event_time_field="event_time", fields=fields),
        **{
            kind: PayloadSchema(
                event_time_field="event_time", fields=fields, format=kind, registry_url="http://registry:8081"
            )
            for kind in ("avro", "protobuf")
        },
    }
    documents = {"json": None, "avro": AvroDocuments(InMemory()), "protobuf": ProtobufDocuments(InMemory())}
    return payloads, documents, {name: RecordDecoder(payloads[name], 3_600_000, documents[name]) for name in payloads}


if __name__ == "__main__":
    sys.exit(main())
