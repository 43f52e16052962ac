"""Kinesis persist throughput per shard, against Kinesis's per-shard read limits (issue 27).

Kinesis allows each shard 5 GetRecords calls per second (shared by every consumer) and 2 MB/s;
tidemark's reader keeps to 5 calls per second per shard and asks for up to 10,000 records a call.
This measures, on the embedded loopback Kinesis (moto's server on 127.0.0.1, a Python process on
the same 2 cores, so the figures are a floor of what the client does, not Kinesis's):

1. the reader alone (connectors.kinesis_log.KinesisLog reading every shard to its tip, no Spark):
   records/s and bytes/s per shard, GetRecords calls/s per shard, and their ratio to the limits;
2. the persist job (spark_jobs/persist/job.py, available_now, as Airflow runs it, in its own
   process): records/s per shard from the run's own ledger, start-up included and excluded.

    .venv/bin/python benchmarks/kinesis_throughput.py [--shards 4] [--records-per-shard 10000]

Prints the figures and writes benchmarks/results/kinesis_throughput.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from connectors.jars import ensure_jars, shared_jars_root  # noqa: E402
from connectors.kinesis_log import KinesisLog  # noqa: E402
from stack.loopback_kinesis import LoopbackKinesis  # noqa: E402
from stack.ports import free_port  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "kinesis_throughput.json"
LIMIT_CALLS_PER_S = 5  # GetRecords per shard per second, shared by all consumers
LIMIT_BYTES_PER_S = 2 * 1024 * 1024
STREAM = "bench-throughput"


def _value(i: int, event_time_ms: int) -> bytes:
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(event_time_ms / 1000)) + f".{event_time_ms % 1000:03d}Z"
    return json.dumps(
        {"device_id": f"dev-{i % 97}", "event_time": iso, "lat": 52.0, "lon": 4.9, "battery": i % 100}
    ).encode()


def _put(client, shards: int, per_shard: int) -> tuple[int, int]:
    """``per_shard`` telemetry records into each shard, event times over the last hour; returns
    (records, bytes)."""
    listing = client.list_shards(StreamName=STREAM, MaxResults=10_000)["Shards"]
    start = int(time.time() * 1000) - 3_600_000
    step = 3_000_000 // per_shard
    records = total_bytes = 0
    batch = []
    for i in range(per_shard):
        for shard in listing:
            data = _value(i, start + i * step)
            batch.append(
                {"Data": data, "PartitionKey": "k", "ExplicitHashKey": shard["HashKeyRange"]["StartingHashKey"]}
            )
            total_bytes += len(data)
            if len(batch) == 500:
                client.put_records(StreamName=STREAM, Records=batch)
                records += len(batch)
                batch = []
    if batch:
        client.put_records(StreamName=STREAM, Records=batch)
        records += len(batch)
    return records, total_bytes


def reader_alone(kinesis: LoopbackKinesis, shards: int, total_bytes: int) -> dict:
    """Read every shard to its tip with the driver's log, 5 calls/s per shard at most."""
    log = KinesisLog(STREAM, kinesis.region, kinesis.endpoint, client=kinesis.client())
    try:
        listing = log.shards(refresh=True)
        positions = {p: shard.starting_sequence for p, shard in listing.items()}
        records = 0
        started = time.perf_counter()
        while True:
            log.fill(positions, None, 10_000)
            bounds = log.bounds()
            moved = False
            for p in positions:
                end = bounds[p].end
                if end > positions[p]:
                    records += log.records_between(p, positions[p], end)
                    positions[p] = end
                    moved = True
            if not moved and all(b.caught_up for b in bounds.values()):
                break
        seconds = time.perf_counter() - started
        get_records = log.calls - 1 - shards  # minus ListShards and one GetShardIterator per shard
    finally:
        log.close()
    per_shard_bytes = total_bytes / shards / seconds
    # The reader allows itself at most 5 GetRecords per shard in any second (a sliding window,
    # connectors.kinesis_api._CallRate): over a run shorter than a few seconds the mean rate
    # says nothing, so the calls are reported as made, with the records each brought.
    return {
        "records": records,
        "seconds": round(seconds, 2),
        "records_per_s_per_shard": round(records / shards / seconds),
        "bytes_per_s_per_shard": round(per_shard_bytes),
        "ratio_to_2_mb_per_s": round(per_shard_bytes / LIMIT_BYTES_PER_S, 3),
        "get_records_calls_per_shard": round(get_records / shards, 1),
        "records_per_get_records_call": round(records / max(1, get_records)),
    }


def persist_job(kinesis: LoopbackKinesis, scratch: Path, jars: Path, shards: int, records: int) -> dict:
    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    stream = document["streams"]["telemetry"]
    stream["source"] = {
        "kind": "kinesis",
        "stream": STREAM,
        "region": kinesis.region,
        "shards": shards,
        "endpoint": kinesis.endpoint,
    }
    stream["lake"] = {"root": str(scratch / "lake"), "checkpoint_root": str(scratch / "checkpoints")}
    document["streams"] = {"telemetry": stream}
    conf = scratch / "streams.yaml"
    conf.write_text(yaml.safe_dump(document))
    env = {
        **os.environ,
        **kinesis.environment,
        "TIDEMARK_JARS": str(jars),
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "spark_jobs/persist/job.py", "--stream", "telemetry", "--conf", str(conf)]
        + ["--mode", "available_now"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"the persist job failed ({done.returncode}):\n{done.stderr[-3000:]}")
    spent = _query_seconds(done.stdout + done.stderr)
    query_s = spent.get("total", wall) - spent.get("startup", 0.0)
    return {
        "records": records,
        "wall_seconds": round(wall, 1),
        "seconds_by_phase": spent,
        "records_per_s_per_shard_wall": round(records / shards / wall),
        "records_per_s_per_shard_after_startup": round(records / shards / query_s),
    }


def _query_seconds(output: str) -> dict:
    """The job's own account of its time (the ``query_finished`` log line's ``seconds``)."""
    for line in output.splitlines():
        if '"query_finished"' in line:
            try:
                return json.loads(line[line.index("{") :]).get("seconds", {})
            except ValueError:
                continue
    return {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--records-per-shard", type=int, default=25_000)
    args = parser.parse_args(argv)
    jars = shared_jars_root()
    ensure_jars(jars, ["delta"])
    with tempfile.TemporaryDirectory(prefix="tidemark-kinesis-throughput-") as scratch:
        scratch = Path(scratch)
        kinesis = LoopbackKinesis(scratch / "kinesis", free_port())
        kinesis.start()
        try:
            kinesis.create_stream(STREAM, args.shards)
            client = kinesis.client()
            put_started = time.perf_counter()
            records, total_bytes = _put(client, args.shards, args.records_per_shard)
            put_s = time.perf_counter() - put_started
            reader = reader_alone(kinesis, args.shards, total_bytes)
            job = persist_job(kinesis, scratch, jars, args.shards, records)
        finally:
            kinesis.stop()
    figures = {
        "command": "benchmarks/kinesis_throughput.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}",
        "shards": args.shards,
        "records": records,
        "mean_record_bytes": round(total_bytes / records),
        "loopback_put_records_per_s": round(records / put_s),
        "limits_per_shard": {"get_records_calls_per_s": LIMIT_CALLS_PER_S, "bytes_per_s": LIMIT_BYTES_PER_S},
        "reader_alone": reader,
        "persist_job": job,
    }
    RESULTS.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
