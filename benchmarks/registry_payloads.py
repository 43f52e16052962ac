"""Avro and Protobuf through a schema registry: the persist job on the same records in three
formats, Spark's own from_avro beside it, and the proof over two writer versions (issue 39).

    .venv/bin/python benchmarks/registry_payloads.py [--records 100000]

Starts its own broker and its own schema registry (Apicurio 3.0.9, in memory), each on a free
loopback port, with all state in one temporary folder. Every Spark job runs as its own process,
one at a time, timed as a whole (JVM start included), its process tree's peak RSS sampled every
0.5 s (catch_up_side_by_side.run_measured). Every run has the same driver heap: the one tidemark
sizes for the stream's row budget (200,000), or TIDEMARK_DRIVER_MEMORY when set.

1. Throughput. --records telemetry records (device_id, lat, lon, battery, event_time) over the
   3 whole hours before the current one, in event-time order over 4 partitions, produced three
   times, each value written by the data generator's encoder of that format
   (generator.value_encoders): into bench_json (JSON), bench_avro (registry-framed Avro) and
   bench_protobuf (registry-framed Protobuf). The persist job (spark_jobs/persist/job.py
   --mode available_now) on each, with its own lake. Per format:

       wall s        the job's process, start to end
       records/s     records in the lake (events + late + quarantine) / wall s
       MB/s          bytes of the record values produced (10^6) / wall s
       B/record      bytes of a record value, on average
       peak RSS      MB, the job's whole process tree

   Checks: each run persisted every record to events and quarantined none.

2. The peer. Spark's own Kafka source with from_avro on bench_avro (spark_kafka_delta.py: the
   registry's 5-byte prefix cut off, the body decoded with the writer schema the generator
   registered, written in tidemark's events layout, idempotent appends, trigger availableNow).
   The same figures, and the ratios of records/s in this run: Avro persist ÷ peer, JSON persist
   ÷ Avro persist, Protobuf persist ÷ JSON persist. Check: the peer wrote every record.

3. The proof, bench_versions: --records valid Avro records over two writer versions interleaved
   (v2 adds an optional ``firmware`` and widens ``battery`` from int to long), registered under
   bench_versions-value, plus one corrupted record per thousand, split evenly over: no magic
   byte, an unknown schema id, shorter than the 5-byte prefix, and the wrong type (a v1 body cut
   short, or a v2 body framed with v1's id). The stream declares device_id, battery (long) and
   firmware (optional). Persisted once (available_now), then read with deltalake. Checks: every
   valid record in events exactly once, its fields as produced, firmware null exactly on the v1
   records; none of them in quarantine; each corrupted record in quarantine with its expected
   reason (not_registry_framed, unknown_schema_id, truncated, malformed_avro) and its raw bytes
   as produced. Then the backfill job (spark_jobs/replay/backfill.py) over those 3 hours into a
   shadow table set with compare: no partition-hour differs, and live and the shadow hold the
   same number of records. Its wall time and memory are reported too.

Prints a table and writes benchmarks/results/registry_payloads.json (--results for another
path). Exit code 1 when any run failed or any check did not pass (each named on stderr), 2 for
bad arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.catch_up_figures import failed, ratio, records_per_second  # noqa: E402
from benchmarks.catch_up_side_by_side import (  # noqa: E402
    STREAM,
    Bench,
    _failed,
    _memory_figures,
    _positive_int,
    _sized_driver_memory,
    run_measured,
)
from benchmarks.scratch_environment import scratch_broker, scratch_environment  # noqa: E402

PARTITIONS = 4
HOURS = 3
HOUR_MS = 3_600_000
# The stream's row budget (conf/streams.yaml): every run's batches and driver heap.
MAX_RECORDS_PER_BATCH = 200_000
FORMATS = ("json", "avro", "protobuf")
RESULTS = REPO / "benchmarks" / "results" / "registry_payloads.json"
BACKFILL_JOB = REPO / "spark_jobs" / "replay" / "backfill.py"

# The proof topic's two writer versions: v2 adds an optional field and widens battery.
_IDENTITY = [
    {"name": "device_id", "type": "string"},
    {"name": "event_time", "type": {"type": "long", "logicalType": "timestamp-millis"}},
]
V1 = {
    "type": "record",
    "name": "Telemetry",
    "namespace": "tidemark.bench",
    "fields": [*_IDENTITY, {"name": "battery", "type": "int"}],
}
V2 = {
    **V1,
    "fields": [
        *_IDENTITY,
        {"name": "battery", "type": "long"},
        {"name": "firmware", "type": ["null", "string"], "default": None},
    ],
}
VERSIONS_FIELDS = {
    "device_id": {"type": "string"},
    "battery": {"type": "long"},
    "firmware": {"type": "string", "required": False},
}
# The ways a framed value breaks, in turn, and the quarantine reason each must get.
CORRUPTIONS = {
    "no_magic_byte": "not_registry_framed",
    "unknown_schema_id": "unknown_schema_id",
    "shorter_than_prefix": "truncated",
    "wrong_type": "malformed_avro",
}


def main() -> int:
    args = parse_args(sys.argv[1:])
    from connectors.jars import ensure_jars, shared_jars_root

    jars = shared_jars_root()
    ensure_jars(jars, ["kafka", "delta", "spark-kafka", "registry"])
    driver_memory = os.environ.get("TIDEMARK_DRIVER_MEMORY") or _sized_driver_memory(MAX_RECORDS_PER_BATCH)
    hour_now = int(time.time() * 1000) // HOUR_MS * HOUR_MS
    window = (hour_now - HOURS * HOUR_MS, hour_now)
    checks: list[dict] = []
    with (
        tempfile.TemporaryDirectory(prefix="tidemark-bench-registry-") as scratch,
        scratch_broker(Path(scratch), jars) as broker,
        scratch_registry(Path(scratch), jars) as registry,
    ):
        scratch = Path(scratch)
        env = {**scratch_environment(broker.bootstrap, scratch, jars), "TIDEMARK_DRIVER_MEMORY": driver_memory}
        bench = RegistryBench(
            broker.bootstrap,
            broker.create_topic,
            scratch,
            env,
            argparse.Namespace(max_records_per_batch=MAX_RECORDS_PER_BATCH, partitions=PARTITIONS),
            registry.url,
        )
        runs = throughput_runs(bench, args.records, window, checks)
        versions = versions_proof(bench, args.records, window, checks)

    ratios = {
        "avro persist / peer": ratio(runs, "persist avro", ["peer from_avro"], "records_per_second"),
        "json persist / avro persist": ratio(runs, "persist json", ["persist avro"], "records_per_second"),
        "protobuf persist / json persist": ratio(runs, "persist protobuf", ["persist json"], "records_per_second"),
    }
    failures = [f"run {name}: {run['failed'].splitlines()[0]}" for name, run in runs.items() if failed(run)]
    failures += [f"check {check['check']}: {check['detail']}" for check in checks if not check["passed"]]
    report = {
        "benchmark": "registry_payloads",
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join([".venv/bin/python benchmarks/registry_payloads.py", *sys.argv[1:]]),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "options": {
            "records": args.records,
            "partitions": PARTITIONS,
            "hours": HOURS,
            "window": [_iso(window[0]), _iso(window[1])],
            "max_records_per_batch": MAX_RECORDS_PER_BATCH,
            "driver_memory": driver_memory,
        },
        "runs": runs,
        "ratios": ratios,
        "versions": versions,
        "checks": checks,
        "failed": failures,
    }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(report, indent=2) + "\n")
    print(render(report))
    print(f"written to {args.results}")
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=_positive_int, default=100_000, help="records of each topic (default 100000)")
    parser.add_argument("--results", type=Path, default=RESULTS, help=f"the JSON written (default {RESULTS})")
    args = parser.parse_args(argv)
    if args.records < 1000:
        parser.error("--records: at least 1000 (the proof topic corrupts one record per thousand)")
    return args


@contextlib.contextmanager
def scratch_registry(scratch: Path, jars: Path):
    """A schema registry of the benchmark's own (in memory, a free loopback port), stopped when
    the block ends, whatever happened in it."""
    from stack.ports import free_port
    from stack.schema_registry import SchemaRegistry

    registry = SchemaRegistry(state_dir=scratch / "registry", jars_dir=jars, port=free_port())
    registry.start()
    try:
        yield registry
    finally:
        registry.stop()


class RegistryBench(Bench):
    """The catch-up benchmark's runs (tidemark_run, peer_run), with each topic's payload: the
    stream's JSON one, or the same fields read as Avro or Protobuf through the registry, or the
    proof topic's fields."""

    def __init__(self, bootstrap, create_topic, scratch, env, args, registry_url: str):
        super().__init__(bootstrap, create_topic, scratch, env, args)
        import yaml

        shipped = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())["streams"][STREAM]["payload"]
        registry = {"registry_url": registry_url}
        self.payloads = {
            "bench_json": shipped,
            "bench_avro": {**shipped, "format": "avro", **registry},
            "bench_protobuf": {**shipped, "format": "protobuf", **registry},
            "bench_versions": {**shipped, "format": "avro", **registry, "fields": VERSIONS_FIELDS},
        }

    def stream_config(self, run_dir: Path, topic: str) -> Path:
        import yaml

        path = super().stream_config(run_dir, topic)
        document = yaml.safe_load(path.read_text())
        document["streams"][STREAM]["payload"] = self.payloads[topic]
        # The benchmark's stream only: another stream's lake reads variables only the jobs have.
        document["streams"] = {STREAM: document["streams"][STREAM]}
        path.write_text(yaml.safe_dump(document))
        return path


# ---------------------------------------------------------------------------------------------
# 1 and 2: the same records in three formats, the persist job on each, the from_avro peer


def throughput_runs(bench: RegistryBench, records: int, window: tuple[int, int], checks: list[dict]) -> dict:
    from generator.value_encoders import value_encoder

    produced: dict[str, dict] = {}
    for payload_format in FORMATS:
        topic = f"bench_{payload_format}"
        stream = bench.load_stream(bench.stream_config(bench.scratch / f"persist_{payload_format}", topic))
        encode = value_encoder(stream, topic)  # Avro and Protobuf: registers <topic>-value first
        print(f"  producing {topic}: {records} records ...", file=sys.stderr, flush=True)
        produced[payload_format] = produce(
            bench,
            topic,
            [(partition, key, encode(record), at) for partition, key, record, at in telemetry(records, window)],
        )

    runs: dict[str, dict] = {}
    for payload_format in FORMATS:
        name = f"persist {payload_format}"
        runs[name] = bench.tidemark_run(f"bench_{payload_format}", f"persist_{payload_format}", records)
        _value_figures(runs[name], produced[payload_format])
        run = runs[name]
        checks.append(
            _check(
                f"{name}: every record persisted, none quarantined",
                not failed(run) and run["persisted"] == records and run["quarantined"] == 0,
                "the run failed"
                if failed(run)
                else f"persisted {run['persisted']}, late {run['late']}, quarantined {run['quarantined']} of {records}",
            )
        )
    runs["peer from_avro"] = bench.peer_run("bench_avro", "peer_avro", records)
    _value_figures(runs["peer from_avro"], produced["avro"])
    peer = runs["peer from_avro"]
    if not failed(peer):
        peer.pop("per_batch")  # its batches' partition maxima: the watermark replay's, not this benchmark's
    checks.append(
        _check(
            "peer from_avro: every record written, none unparsed",
            not failed(peer) and peer["records"] == records and peer["unparsed"] == 0,
            "the run failed" if failed(peer) else f"wrote {peer['records']} of {records}, unparsed {peer['unparsed']}",
        )
    )
    return runs


def telemetry(records: int, window: tuple[int, int]):
    """(partition, key, record, log timestamp ms) of ``records`` telemetry records spread evenly
    over ``window`` in event-time order, round-robin over the partitions (so each partition's
    records are in order too); the record as the generator writes it (ISO-8601 event time)."""
    from tidemark.event_time_text import format_event_time

    start, end = window
    for i in range(records):
        at = start + (end - start) * i // records
        device = f"scooter-{i % 500:03d}"
        record = {
            "device_id": device,
            "lat": 52.3 + (i % 97) / 1000,
            "lon": 4.9 + (i % 89) / 1000,
            "battery": i % 100,
            "event_time": format_event_time(at),
        }
        yield i % PARTITIONS, device.encode(), record, at


def produce(bench: RegistryBench, topic: str, records) -> dict:
    """Create ``topic`` and produce (partition, key, value, timestamp ms) ``records`` in order;
    returns how many and their values' bytes."""
    from generator.kafka_target import KafkaTarget

    bench.create_topic(topic, PARTITIONS)
    target = KafkaTarget(bench.bootstrap, topic, PARTITIONS)
    count = value_bytes = 0
    for partition, key, value, at in records:
        target.send(partition, key, value, at)
        count += 1
        value_bytes += len(value)
    target.close()
    return {"records": count, "value_bytes": value_bytes}


def _value_figures(run: dict, produced: dict) -> None:
    """MB/s of the values produced over the run's wall time, and a value's average size."""
    if failed(run):
        return
    run["value_megabytes_per_second"] = round(produced["value_bytes"] / run["wall_seconds"] / 1e6, 2)
    run["bytes_per_record"] = round(produced["value_bytes"] / produced["records"], 1)


# ---------------------------------------------------------------------------------------------
# 3: two writer versions and corrupted records, persisted, checked, backfilled and compared


def versions_proof(bench: RegistryBench, records: int, window: tuple[int, int], checks: list[dict]) -> dict:
    topic = "bench_versions"
    run_dir = bench.scratch / "versions"
    conf = bench.stream_config(run_dir, topic)
    stream = bench.load_stream(conf)
    print(f"  producing {topic}: {records} records over v1 and v2, {records // 1000} corrupted ...", file=sys.stderr)
    planned = versions_records(stream.payload.registry_url, topic, records, window)
    produced = produce(bench, topic, [(p, None, value, at) for p, value, at, _ in planned])
    expected, offsets = {}, Counter()
    for partition, value, _, meaning in planned:
        expected[(partition, offsets[partition])] = (meaning, value)
        offsets[partition] += 1
    valid = {key: meaning for key, (meaning, _) in expected.items() if "version" in meaning}
    corrupted = {key: (meaning, value) for key, (meaning, value) in expected.items() if "corruption" in meaning}
    figures: dict = {
        "produced": produced["records"],
        "valid": len(valid),
        "v1": sum(1 for m in valid.values() if m["version"] == "v1"),
        "v2": sum(1 for m in valid.values() if m["version"] == "v2"),
        "corrupted": dict(sorted(Counter(m["corruption"] for m, _ in corrupted.values()).items())),
    }

    persist = bench.tidemark_run(topic, "versions", produced["records"])
    figures["persist"] = persist
    _value_figures(persist, produced)
    if failed(persist):
        checks.append(_check("versions: persisted", False, "the persist run failed"))
        return figures
    figures["lake"] = lake_checks(stream, valid, corrupted, checks)

    backfill = backfill_run(bench, conf, window)
    figures["backfill"] = backfill
    if failed(backfill):
        checks.append(_check("versions backfill: shadow set compared with live", False, "the backfill run failed"))
        return figures
    comparison = backfill["comparison"]
    checks.append(
        _check(
            "versions backfill: no partition-hour differs, live and shadow hold the same records",
            comparison["differing"] == [] and comparison["records_live"] == comparison["records_shadow"] == len(valid),
            f"{len(comparison['differing'])} differing partition-hours; records live {comparison['records_live']}, "
            f"shadow {comparison['records_shadow']}, valid produced {len(valid)}",
        )
    )
    return figures


def versions_records(registry_url: str, topic: str, records: int, window: tuple[int, int]) -> list[tuple]:
    """(partition, value, log timestamp ms, meaning) in the order produced: ``records`` valid
    ones (every third written with v2) and records // 1000 corrupted ones spread evenly among
    them, all over ``window`` in time order, round-robin over the partitions. ``meaning`` says
    what a record is: {"version", and the fields as written} or {"corruption", "reason"}."""
    from fastavro import parse_schema, schemaless_writer

    from connectors.schema_registry_client import register_schema
    from tidemark.registry_access import RegistryAccess

    access = RegistryAccess.of(registry_url, None)
    ids = {
        name: register_schema(access, f"{topic}-value", json.dumps(schema)) for name, schema in (("v1", V1), ("v2", V2))
    }
    parsed = {"v1": parse_schema(V1), "v2": parse_schema(V2)}

    def body(version: str, fields: dict) -> bytes:
        out = io.BytesIO()
        schemaless_writer(out, parsed[version], fields)
        return out.getvalue()

    def framed(version: str, raw: bytes) -> bytes:
        return b"\x00" + ids[version].to_bytes(4, "big") + raw

    unknown_id = max(ids.values()) + 1_000_000
    corrupted = records // 1000
    total = records + corrupted
    corrupted_at = {round((j + 0.5) * total / corrupted): j for j in range(corrupted)}
    kinds = list(CORRUPTIONS)
    start, end = window
    planned, valid = [], 0
    for k in range(total):
        at = start + (end - start) * k // total
        partition = k % PARTITIONS
        v1_fields = {"device_id": f"scooter-{k % 500:03d}", "event_time": at, "battery": k % 100}
        if k in corrupted_at:
            j = corrupted_at[k]
            kind = kinds[j % len(kinds)]
            if kind == "no_magic_byte":  # a JSON producer's value on an Avro topic
                value = json.dumps({**v1_fields, "event_time": _iso(at)}).encode()
            elif kind == "unknown_schema_id":
                value = b"\x00" + unknown_id.to_bytes(4, "big") + body("v1", v1_fields)
            elif kind == "shorter_than_prefix":
                value = framed("v1", b"")[: 1 + j % 4]  # 1 to 4 bytes
            elif (j // len(kinds)) % 2 == 0:  # wrong type: a v1 body cut short
                value = framed("v1", body("v1", v1_fields)[:-4])
            else:  # wrong type: a v2 body framed with v1's id
                value = framed("v1", body("v2", {**v1_fields, "battery": 2**33 + k, "firmware": "2.0"}))
            planned.append((partition, value, at, {"corruption": kind, "reason": CORRUPTIONS[kind]}))
            continue
        if valid % 3 == 0:
            fields = {**v1_fields, "battery": 2**33 + k, "firmware": f"2.{k % 10}"}
            planned.append((partition, framed("v2", body("v2", fields)), at, {"version": "v2", **fields}))
        else:
            planned.append((partition, framed("v1", body("v1", v1_fields)), at, {"version": "v1", **v1_fields}))
        valid += 1
    return planned


def lake_checks(stream, valid: dict, corrupted: dict, checks: list[dict]) -> dict:
    """Read events and quarantine with deltalake and hold them against what was produced."""
    import pyarrow as pa

    from connectors.lake_storage import is_delta_table, open_delta_table

    events = open_delta_table(stream.table_path("events")).to_pyarrow_table(
        columns=["source_partition", "source_offset", "device_id", "battery", "firmware", "event_time"]
    )
    event_ms = events["event_time"].cast(pa.timestamp("ms", tz="UTC")).cast(pa.int64()).to_pylist()
    rows = [
        {**row, "event_time": ms}
        for row, ms in zip(events.drop_columns(["event_time"]).to_pylist(), event_ms, strict=True)
    ]
    quarantine_path = stream.table_path("quarantine")
    quarantine = (
        open_delta_table(quarantine_path)
        .to_pyarrow_table(columns=["source_partition", "source_offset", "reason", "raw_value"])
        .to_pylist()
        if is_delta_table(quarantine_path)
        else []
    )

    seen = Counter((r["source_partition"], r["source_offset"]) for r in rows)
    duplicated = sum(1 for n in seen.values() if n > 1)
    missing = sum(1 for key in valid if key not in seen)
    unexpected = sum(1 for key in seen if key not in valid)
    checks.append(
        _check(
            "versions: every valid record in events exactly once",
            duplicated == missing == unexpected == 0,
            f"{len(rows)} rows for {len(valid)} valid records: {duplicated} offsets twice or more, "
            f"{missing} missing, {unexpected} not a valid record's",
        )
    )
    wrong_fields = firmware_wrong = 0
    for row in rows:
        meaning = valid.get((row["source_partition"], row["source_offset"]))
        if meaning is None:
            continue
        wrong_fields += any(row[name] != meaning.get(name) for name in ("device_id", "battery", "event_time"))
        wrong_fields += row["firmware"] != meaning.get("firmware")
        firmware_wrong += (row["firmware"] is None) != (meaning["version"] == "v1")
    checks.append(
        _check(
            "versions: firmware null exactly on the v1 records",
            firmware_wrong == 0,
            f"{firmware_wrong} rows where firmware is null on a v2 record or set on a v1 one",
        )
    )
    checks.append(
        _check(
            "versions: every persisted record's fields as produced (battery widened to long)",
            wrong_fields == 0,
            f"{wrong_fields} rows whose device_id, battery, firmware or event_time differ from what was produced",
        )
    )

    quarantined = {(r["source_partition"], r["source_offset"]): r for r in quarantine}
    valid_quarantined = sum(1 for key in quarantined if key in valid)
    checks.append(
        _check(
            "versions: no valid record in quarantine",
            valid_quarantined == 0,
            f"{valid_quarantined} valid records quarantined",
        )
    )
    reasons_wrong, bytes_wrong, not_quarantined = Counter(), 0, 0
    for key, (meaning, value) in corrupted.items():
        row = quarantined.get(key)
        if row is None:
            not_quarantined += 1
            continue
        if row["reason"] != meaning["reason"]:
            reasons_wrong[f"{meaning['corruption']}: {row['reason']}"] += 1
        bytes_wrong += row["raw_value"] != value
    checks.append(
        _check(
            "versions: each corrupted record in quarantine with its reason and its raw bytes",
            not_quarantined == bytes_wrong == 0 and not reasons_wrong and len(quarantined) == len(corrupted),
            f"{len(quarantined)} quarantined for {len(corrupted)} corrupted: {not_quarantined} not quarantined, "
            f"wrong reasons {dict(reasons_wrong)}, {bytes_wrong} raw values differ",
        )
    )
    by_kind: dict[str, dict] = {}
    for key, (meaning, _) in corrupted.items():
        got = by_kind.setdefault(meaning["corruption"], {"expected_reason": meaning["reason"], "reasons": Counter()})
        got["reasons"][quarantined[key]["reason"] if key in quarantined else "(not quarantined)"] += 1
    return {
        "events_rows": len(rows),
        "events_v1": sum(1 for r in rows if r["firmware"] is None),
        "events_v2": sum(1 for r in rows if r["firmware"] is not None),
        "max_battery": max((r["battery"] for r in rows), default=None),
        "quarantine_rows": len(quarantine),
        "quarantine_by_corruption": {
            kind: {"expected_reason": got["expected_reason"], "reasons": dict(got["reasons"])}
            for kind, got in sorted(by_kind.items())
        },
    }


def backfill_run(bench: RegistryBench, conf: Path, window: tuple[int, int]) -> dict:
    """The backfill job over ``window`` into the shadow set "registry_bench" with compare, as its own
    process (the request as the backfill DAG's validate task makes it); its result's comparison."""
    from tidemark.backfill_request import parse_backfill_request
    from tidemark.stream_config import load_streams

    print("  run backfill of bench_versions into a shadow set, compared ...", file=sys.stderr, flush=True)
    run_dir = bench.scratch / "versions_backfill"
    result = run_dir / "result.json"
    try:
        params = {
            "stream": STREAM,
            "start": _iso(window[0]),
            "end": _iso(window[1]),
            "partitions": "",
            "target": "shadow",
            "shadow_name": "registry_bench",
            "compare": True,
        }
        request = parse_backfill_request(params, load_streams(conf), now_ms=int(time.time() * 1000))
        command = [sys.executable, str(BACKFILL_JOB), "--conf", str(conf), "--request", request.encode()]
        wall_s, peak = run_measured([*command, "--result", str(result)], bench.env, run_dir / "job.log")
        outcome = json.loads(result.read_text())
    except Exception as error:  # noqa: BLE001 - recorded as the run's result, the checks say it failed
        return _failed(error)
    comparison = outcome["comparison"]
    return {
        "batches": outcome["batches"],
        "records": outcome["records"],
        "late": outcome["late"],
        "quarantined": outcome["quarantined"],
        "records_live": comparison["records_live"],
        "records_shadow": comparison["records_shadow"],
        "wall_seconds": round(wall_s, 1),
        "records_per_second": records_per_second(comparison["records_shadow"], wall_s),
        **_memory_figures(peak),
        "comparison": comparison,
    }


# ---------------------------------------------------------------------------------------------


def _check(name: str, passed: bool, detail: str) -> dict:
    print(f"  check {'PASS' if passed else 'FAIL'}: {name} ({detail})", file=sys.stderr, flush=True)
    return {"check": name, "passed": bool(passed), "detail": detail}


def _iso(ms: int) -> str:
    from tidemark.event_time_text import format_event_time

    return format_event_time(ms)


def render(report: dict) -> str:
    """The figures as a short table, the ratios and the checks."""
    options = report["options"]
    lines = [
        f"registry payloads, {report['measured_at']}: {options['records']:,} records a topic, "
        f"{options['partitions']} partitions, {options['hours']} h, driver {options['driver_memory']}",
        "",
        f"{'run':<28}{'wall s':>9}{'records/s':>12}{'MB/s':>8}{'B/record':>10}{'peak RSS MB':>13}",
    ]
    rows = dict(report["runs"])
    versions = report["versions"]
    rows["persist versions (v1+v2)"] = versions.get("persist", {"failed": "did not run"})
    rows["backfill versions, compare"] = versions.get("backfill", {"failed": "did not run"})
    for name, run in rows.items():
        if failed(run):
            lines.append(f"{name:<28}FAILED: {run['failed'].splitlines()[0][:100]}")
            continue
        mb = run.get("value_megabytes_per_second")
        size = run.get("bytes_per_record")
        lines.append(
            f"{name:<28}{run['wall_seconds']:>9.1f}{run['records_per_second']:>12,}"
            f"{'' if mb is None else f'{mb:.2f}':>8}{'' if size is None else f'{size:.1f}':>10}"
            f"{run['peak_rss_megabytes']:>13,}"
        )
    lines.append("")
    for name, figure in report["ratios"].items():
        lines.append(f"{name} (records/s): {figure.get('value', figure.get('no_ratio'))}")
    lines.append("")
    for check in report["checks"]:
        lines.append(f"{'PASS' if check['passed'] else 'FAIL'}  {check['check']}: {check['detail']}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
