"""Persistence throughput: a backlog of N records caught up by the persist job, on this machine.

    .venv/bin/python benchmarks/persist_throughput.py [--records 2000000] [--max-records-per-batch 200000]
        [--lake local|s3|both] [--security plaintext|sasl_ssl|both]

Starts its own broker (temporary state, free loopback port), produces the backlog with the data
generator (four heavy partitions), runs the persist job in available_now mode as a separate
process (as spark-submit would), and reports:

- wall time of the whole job (JVM start included) and of its batches only (steady state);
- records/s and MB/s (MB = 10^6 bytes of record values, as read from the log);
- peak resident memory of the job's process tree (JVM + Python workers), sampled every 0.5 s.

Results are printed and written to benchmarks/results/persist_throughput.json (aligned, the default)
or persist_throughput_no_alignment.json (--no-alignment). ``--lake s3`` puts the lake and the
checkpoint on a loopback S3 (s3proxy, its own JVM) instead of local disk; ``--lake both`` runs the
job twice over the same backlog, local disk first, and writes persist_throughput_lakes.json.
``--security both`` runs it twice over the same backlog on the local lake, from the broker's
PLAINTEXT listener and then from its SASL_SSL one (SCRAM-SHA-512, TLS, the settings of a Kafka
connection in the environment), and writes persist_throughput_security.json with the ratio of the
two and the start-up each took (the job's wall time less its batches).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.process_memory import wait_sampling_peak_rss  # noqa: E402
from benchmarks.scratch_environment import scratch_broker, scratch_environment  # noqa: E402
from connectors.jars import ensure_jars, shared_jars_root  # noqa: E402
from stack.kafka_broker import KafkaBroker  # noqa: E402

HEAVY_RECORDS_PER_HOUR = 18_000
PARTITIONS = 4
RESULTS = REPO / "benchmarks" / "results" / "persist_throughput.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--max-records-per-batch", type=int, default=200_000)
    parser.add_argument("--no-alignment", action="store_true", help="record-count slices instead of aligned ones")
    parser.add_argument("--lake", choices=("local", "s3", "both"), default="local")
    parser.add_argument("--security", choices=("plaintext", "sasl_ssl", "both"), default="plaintext")
    parser.add_argument("--results", type=Path, default=None)
    args = parser.parse_args()
    name = (
        "persist_throughput"
        + ("_no_alignment" if args.no_alignment else "")
        + {"local": "", "s3": "_s3", "both": "_lakes"}[args.lake]
        + {"plaintext": "", "sasl_ssl": "_sasl_ssl", "both": "_security"}[args.security]
    )
    if args.security != "plaintext" and args.lake != "local":
        parser.error("--security compares listeners on the local lake: leave --lake out")
    results = args.results or RESULTS.with_name(f"{name}.json")

    jars = shared_jars_root()
    ensure_jars(jars, ["kafka", "delta", "s3proxy"] if args.lake != "local" else ["kafka", "delta"])
    lakes = ["local", "s3"] if args.lake == "both" else [args.lake]
    with tempfile.TemporaryDirectory(prefix="tidemark-bench-") as scratch:
        scratch = Path(scratch)
        secured = args.security != "plaintext"
        with scratch_broker(scratch, jars, secured) as broker, _loopback_s3(scratch, jars, "s3" in lakes) as s3:
            if secured:
                listeners = ["plaintext", "sasl_ssl"] if args.security == "both" else ["sasl_ssl"]
                figures = run_listeners(
                    broker, scratch, jars, args.records, args.max_records_per_batch, not args.no_alignment, listeners
                )
            else:
                figures = run(
                    broker, scratch, jars, args.records, args.max_records_per_batch, not args.no_alignment, lakes, s3
                )
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    print(f"written to {results}")
    return 0


@contextlib.contextmanager
def _loopback_s3(scratch: Path, jars: Path, wanted: bool):
    """A loopback S3 of the benchmark's own when ``wanted`` (else None), stopped at the end."""
    if not wanted:
        yield None
        return
    from stack.loopback_s3 import LoopbackS3
    from stack.ports import free_port

    store = LoopbackS3(state_dir=scratch / "s3", jars_dir=jars, port=free_port())
    store.start()
    try:
        yield store
    finally:
        store.stop()


def run_listeners(
    broker: KafkaBroker,
    scratch: Path,
    jars: Path,
    records: int,
    max_records_per_batch: int,
    align: bool,
    listeners: list[str],
) -> dict:
    """The same backlog persisted from each of ``listeners`` (plaintext, sasl_ssl), each into a
    lake and checkpoints of its own; the SASL_SSL run reads with a Kafka connection's settings."""
    from tidemark.kafka_access import settings_variable

    topic, summary, value_bytes = _backlog(broker, scratch, jars, records)
    figures = {}
    for listener in listeners:
        env = {
            **scratch_environment(broker.bootstrap, scratch, jars),
            "TIDEMARK_LAKE_ROOT": str(scratch / f"lake-{listener}"),
            "TIDEMARK_CHECKPOINT_ROOT": str(scratch / f"checkpoints-{listener}"),
        }
        secured = listener == "sasl_ssl"
        if secured:
            env[settings_variable("bench_kafka")] = json.dumps(broker.sasl_settings("SCRAM-SHA-512"))
        figures[listener] = _persist(
            scratch,
            env,
            topic,
            broker,
            summary["records"],
            value_bytes,
            max_records_per_batch,
            align,
            f"local-{listener}",
            bootstrap=broker.sasl_bootstrap if secured else broker.bootstrap,
            kafka_conn_id="bench_kafka" if secured else None,
        )
        figures[listener]["startup_seconds"] = round(
            figures[listener]["job_wall_seconds"] - figures[listener]["batch_seconds"], 1
        )
    if len(figures) == 1:
        return figures[listeners[0]]
    plain, secure = figures["plaintext"], figures["sasl_ssl"]
    return {
        "benchmark": "persist_throughput_security",
        "listeners": figures,
        "sasl_ssl_over_plaintext_records_per_second_batches": round(
            secure["records_per_second_batches"] / plain["records_per_second_batches"], 3
        ),
        "sasl_ssl_over_plaintext_records_per_second_wall": round(
            secure["records_per_second_wall"] / plain["records_per_second_wall"], 3
        ),
        "startup_added_seconds": round(secure["startup_seconds"] - plain["startup_seconds"], 1),
    }


def _backlog(broker: KafkaBroker, scratch: Path, jars: Path, records: int) -> tuple[str, dict, int]:
    """(topic, the generator's summary, bytes of record values) of a backlog of ``records``."""
    topic = "bench_persist"
    broker.create_topic(topic, PARTITIONS)
    hours = math.ceil(records / (HEAVY_RECORDS_PER_HOUR * PARTITIONS))
    env = scratch_environment(broker.bootstrap, scratch, jars)
    # The backlog ends an hour ago so that no record is ahead of the future guard's limit.
    end = time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime(time.time() - 3600))
    produced = subprocess.run(
        [sys.executable, "-m", "generator", "--topic", topic, "backlog", "--hours", str(hours), "--end", end]
        + ["--profiles", "heavy"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return topic, json.loads(produced.stdout.strip().splitlines()[-1]), _value_bytes(broker.bootstrap, topic)


def run(
    broker: KafkaBroker,
    scratch: Path,
    jars: Path,
    records: int,
    max_records_per_batch: int,
    align: bool,
    lakes: list[str] = ("local",),
    s3=None,
) -> dict:
    env = scratch_environment(broker.bootstrap, scratch, jars)
    topic, summary, value_bytes = _backlog(broker, scratch, jars, records)
    figures = {
        lake: _persist(
            scratch,
            env if lake == "local" else {**env, **s3.lake_environment("bench")},
            topic,
            broker,
            summary["records"],
            value_bytes,
            max_records_per_batch,
            align,
            lake,
        )
        for lake in lakes
    }
    return figures[lakes[0]] if len(lakes) == 1 else {"benchmark": "persist_throughput_lakes", "lakes": figures}


def _persist(
    scratch: Path,
    env: dict,
    topic: str,
    broker: KafkaBroker,
    total: int,
    value_bytes: int,
    max_records_per_batch: int,
    align: bool,
    lake: str,
    bootstrap: str | None = None,
    kafka_conn_id: str | None = None,
) -> dict:
    log_file = scratch / f"persist-{lake}.log"
    started = time.monotonic()
    job = subprocess.Popen(
        [
            sys.executable,
            str(REPO / "spark_jobs" / "persist" / "job.py"),
            "--stream",
            "telemetry",
            "--mode",
            "available_now",
            "--max-records-per-batch",
            str(max_records_per_batch),
            *([] if align else ["--no-alignment"]),
        ],
        env={**env, "TIDEMARK_CONF": str(_bench_config(scratch, topic, bootstrap or broker.bootstrap, kafka_conn_id))},
        stdout=log_file.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    peak_rss = wait_sampling_peak_rss(job)
    wall_s = time.monotonic() - started
    if job.returncode != 0:
        raise SystemExit(f"persist job failed ({job.returncode}); see {log_file}:\n" + log_file.read_text()[-3000:])

    batches = [entry for entry in _json_lines(log_file) if entry.get("event") == "batch_persisted"]
    persisted = sum(b["records"] + b["quarantined"] for b in batches)
    batch_s = sum(b["seconds"] for b in batches)
    return {
        "benchmark": "persist_throughput",
        "lake": lake,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
        "slicing": "event_time (aligned)" if align else "record_count",
        "records": total,
        "persisted": persisted,
        "value_megabytes": round(value_bytes / 1e6, 1),
        "batches": len(batches),
        "max_records_per_batch": max_records_per_batch,
        "job_wall_seconds": round(wall_s, 1),
        "batch_seconds": round(batch_s, 1),
        "records_per_second_wall": round(total / wall_s),
        "megabytes_per_second_wall": round(value_bytes / 1e6 / wall_s, 2),
        "records_per_second_batches": round(total / batch_s),
        "megabytes_per_second_batches": round(value_bytes / 1e6 / batch_s, 2),
        "peak_rss_megabytes": round(peak_rss / 1e6),
    }


def _json_lines(log_file: Path) -> list[dict]:
    """The job's structured log lines (Spark's own plain-text lines are skipped)."""
    entries = []
    for line in log_file.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            try:
                entries.append(json.loads(line))
            except ValueError:
                continue
    return entries


def _bench_config(scratch: Path, topic: str, bootstrap: str, kafka_conn_id: str | None = None) -> Path:
    import yaml

    # The shipped file reads lake.root and lake.checkpoint_root from the environment.
    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    stream = document["streams"]["telemetry"]
    stream["source"].update(topic=topic, bootstrap_servers=bootstrap)
    if kafka_conn_id:
        stream["source"]["kafka_conn_id"] = kafka_conn_id
    path = scratch / f"streams-{kafka_conn_id or 'plaintext'}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def _value_bytes(bootstrap: str, topic: str) -> int:
    """Total size of the record values in the topic (what the job decodes)."""
    sys.path.insert(0, str(REPO))
    from connectors.kafka_log import KafkaLog, read_range

    log = KafkaLog(bootstrap, topic)
    try:
        total = 0
        for partition in log.partition_ids():
            bounds = log.bounds(partition)
            for chunk in read_range(bootstrap, topic, partition, bounds.earliest, bounds.end):
                total += sum(len(record.value or b"") for record in chunk)
        return total
    finally:
        log.close()


if __name__ == "__main__":
    sys.exit(main())
