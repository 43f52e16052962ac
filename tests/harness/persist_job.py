"""Shared pieces of the persist integration tests: a stream config per test, records to produce,
and the jobs run two ways.

- In this process (``run_persist``, ``run_recover``, ``run_backfill``): the job's own ``main()``
  with its arguments, on the test session's Spark (``lake_spark_session`` gets the session the
  ``spark`` fixture made), its log lines written to the given file as the job writes them, its exit
  code returned. The same code spark-submit runs, without a JVM start and a Delta warm-up per run.
- As a separate process (``start_persist``, ``start_backfill``, ``continuous_persist``): only where
  the test kills the job (SIGKILL takes the JVM down with it) or stops a continuous one; a process
  of its own is the only way to crash a driver. spark-submit itself is run by the DAG tests.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import yaml

REPO = Path(__file__).resolve().parents[2]
PERSIST_JOB = REPO / "spark_jobs" / "persist" / "job.py"


def write_stream_config(
    tmp_path: Path,
    bootstrap: str,
    topic: str,
    partitions: int,
    kafka_conn_id: str | None = None,
    payload: dict | None = None,
    **persist,
) -> Path:
    """A streams.yaml for one test: the shipped telemetry stream on its own topic and lake folder.
    ``kafka_conn_id``: the Kafka connection that secures the brokers (its name, never a setting);
    ``payload``: the stream's ``payload:`` section instead of the shipped one."""
    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    stream = document["streams"]["telemetry"]
    stream["source"].update(bootstrap_servers=bootstrap, topic=topic, partitions=partitions)
    if kafka_conn_id:
        stream["source"]["kafka_conn_id"] = kafka_conn_id
    stream["lake"] = {"root": str(tmp_path / "lake"), "checkpoint_root": str(tmp_path / "checkpoints")}
    stream["persist"].update(persist)
    if payload is not None:
        stream["payload"] = payload
    document["streams"] = {"telemetry": stream}  # the test's stream only: no other stream's lake to set
    path = tmp_path / "streams.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


# The offline-device detector's section of a test stream: devices by device_id, offline after 30
# minutes, 30-minute live slices, 6-hour backfill slices.
OFFLINE_DEVICES = {"device_field": "device_id", "offline_after": "30m", "live_slice": "30m", "backfill_slice": "6h"}


def telemetry_value(device: str, event_time_ms: int, battery: int = 50) -> bytes:
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(event_time_ms / 1000)) + f".{event_time_ms % 1000:03d}Z"
    return json.dumps({"device_id": device, "event_time": iso, "lat": 52.0, "lon": 4.9, "battery": battery}).encode()


def produce(bootstrap: str, topic: str, records: list[tuple], security: dict | None = None) -> dict[int, int]:
    """Produce (partition, value, timestamp_ms) records, or (partition, value, timestamp_ms, key,
    headers); returns records produced per partition. ``security``: the librdkafka settings of a
    secured listener."""
    from confluent_kafka import Producer

    producer = Producer(
        {**(security or {}), "bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True}
    )
    counts: dict[int, int] = {}
    for partition, value, timestamp_ms, *keyed in records:
        key, headers = (*keyed, None, None)[:2]
        while True:
            try:
                producer.produce(
                    topic, value=value, key=key, headers=headers, partition=partition, timestamp=timestamp_ms
                )
                break
            except BufferError:
                producer.poll(0.1)
        counts[partition] = counts.get(partition, 0) + 1
    assert producer.flush(60) == 0, "not every record reached the broker"
    return counts


def job_environment() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("TIDEMARK_JARS", str(REPO / ".tidemark" / "jars"))
    env.update(PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1", TIDEMARK_DRIVER_MEMORY="1g")
    return env


def start_persist(conf: Path, *args: str, log: Path, environment: dict[str, str] | None = None) -> subprocess.Popen:
    """Start the persist job in its own process group (so SIGKILL takes its JVM down with it)."""
    return subprocess.Popen(
        [sys.executable, str(PERSIST_JOB), "--stream", "telemetry", "--conf", str(conf), *args],
        env={**job_environment(), **(environment or {})},
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


@contextlib.contextmanager
def continuous_persist(conf: Path, log: Path) -> Iterator[subprocess.Popen]:
    """The persist job in the mode its configuration says (continuous), for the block; stopped
    with SIGTERM at the end of it, as Airflow stops a task, whatever happened inside."""
    job = start_persist(conf, log=log)
    try:
        yield job
    finally:
        os.killpg(job.pid, signal.SIGTERM)
        job.wait(60)


def kill_after_batches(job: subprocess.Popen, ledger_path: Path, batches: int, timeout_s: float = 300) -> None:
    """SIGKILL the job (JVM included) once its ledger holds ``batches`` committed batches, and check
    the kill landed while it was still running (a job that had already finished was not killed)."""
    deadline = time.monotonic() + timeout_s
    while committed_versions(ledger_path) < batches + 1:  # version 0 creates the table
        assert job.poll() is None, "the job ended before it could be killed; make the backlog larger"
        assert time.monotonic() < deadline, f"the job committed nothing within {timeout_s:.0f} s"
        time.sleep(0.2)
    os.killpg(job.pid, signal.SIGKILL)
    assert job.wait(30) == -signal.SIGKILL, (
        f"the job exited {job.returncode} on its own before the kill: make the backlog larger"
    )


def recovery_request_args(
    conf: Path, partition: int, ranges: str, reason: str = "test", stream: str = "telemetry"
) -> list[str]:
    """The recovery job's ``--request`` for ``ranges`` ("start-end,...", as a person types them in
    the recover DAG's form) of ``partition``: made by the form's parser, as the DAG makes it."""
    from tidemark.recovery_request import parse_recovery_form
    from tidemark.stream_config import load_streams

    params = {"stream": stream, "partition": partition, "ranges": ranges, "reason": reason}
    return ["--request", parse_recovery_form(params, load_streams(conf)).encode()]


def backfill_request_args(
    conf: Path,
    start: str,
    end: str,
    *,
    partitions: str = "",
    target: str = "events",
    shadow_name: str = "",
    compare: bool = False,
    run_name: str = "",
) -> list[str]:
    """The backfill job's ``--request`` (and ``--run-name``) for the backfill DAG's form params:
    made by the form's parser, as the DAG's validate task makes it. The parser's "not in the
    future" rule is the form's, not the job's: a trial's clock may run ahead of this one."""
    from tidemark.backfill_request import parse_backfill_request
    from tidemark.stream_config import load_streams

    params = {
        "stream": "telemetry",
        "start": start,
        "end": end,
        "partitions": partitions,
        "target": target,
        "shadow_name": shadow_name,
        "compare": compare,
    }
    request = parse_backfill_request(params, load_streams(conf), now_ms=2**62, run_name=run_name or None)
    return ["--request", request.encode(), *(["--run-name", run_name] if run_name else [])]


def run_recover(
    conf: Path,
    partition: int,
    ranges: str,
    log: Path,
    result: Path,
    environment: dict[str, str] | None = None,
    max_records_per_batch: int | None = None,
) -> int:
    """Run the recovery job for ``ranges`` ("start-end,...") of ``partition`` in this process;
    returns its exit code (the result JSON is at ``result``). ``environment``: for the run only;
    ``max_records_per_batch``: the job's option of that name (default: the stream's budget)."""
    from spark_jobs.replay.recover import main

    argv = ["--conf", str(conf), *recovery_request_args(conf, partition, ranges), "--result", str(result)]
    if max_records_per_batch is not None:
        argv += ["--max-records-per-batch", str(max_records_per_batch)]
    return run_in_process(main, argv, log, environment)


def run_redrive(conf: Path, folder: Path, name: str, environment: dict | None = None, **request) -> tuple[int, dict]:
    """Run the redrive job in this process for a RedriveRequest of ``request``'s fields; returns
    its exit code and its result (``{}`` when it wrote none). Its log: ``folder/redrive-<name>.log``."""
    from spark_jobs.replay.redrive import main
    from tidemark.redrive_request import RedriveRequest

    result = folder / f"redrive-{name}.json"
    argv = ["--conf", str(conf), "--request", RedriveRequest("telemetry", **request).encode(), "--result", str(result)]
    code = run_in_process(main, argv, folder / f"redrive-{name}.log", environment)
    return code, json.loads(result.read_text()) if result.exists() else {}


def run_erase(conf: Path, folder: Path, name: str, **request) -> tuple[int, dict]:
    """Run the erasure job in this process for an ErasureRequest of ``request``'s fields; returns
    its exit code and its result (``{}`` when it wrote none). Its log: ``folder/erase-<name>.log``."""
    from spark_jobs.erasure.job import main
    from tidemark.erasure_request import ErasureRequest

    result = folder / f"erase-{name}.json"
    argv = ["--conf", str(conf), "--request", ErasureRequest("telemetry", **request).encode(), "--result", str(result)]
    code = run_in_process(main, argv, folder / f"erase-{name}.log")
    return code, json.loads(result.read_text()) if result.exists() else {}


def run_persist(conf: Path, *args: str, log: Path, environment: dict[str, str] | None = None) -> None:
    """Run the persist job to its end in this process; fails the test, with the log's tail, unless
    it exits 0. ``environment`` is set for the run only (the chaos switch, for one)."""
    from spark_jobs.persist.job import main

    code = run_in_process(main, ["--stream", "telemetry", "--conf", str(conf), *args], log, environment)
    assert code == 0, f"persist job exited {code}; log tail:\n{_tail(log)}"


def run_in_process(main, argv: list[str], log: Path, environment: dict[str, str] | None = None) -> int:
    """``main(argv)`` of a job, in this process, as spark-submit would run it: its stdout, stderr and
    log lines (the job configures its own JSON logging) appended to ``log``, ``environment`` set
    for the call only. Returns the exit code. An exception escapes as it is (the test shows the
    traceback); the logging set-up of the test process is restored whatever happens."""
    from spark_jobs.json_log import configure_json_logging

    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    with log.open("a") as out, mock.patch.dict(os.environ, environment or {}):
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                configure_json_logging()  # as the job's __main__ does; a job that sets it up itself does the same
                code = main(argv)
        except SystemExit as exit_:  # argparse refusing an argument (2), as the process would exit
            code = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
        finally:
            for handler in root.handlers:
                if handler not in saved_handlers:
                    handler.flush()
            root.handlers[:] = saved_handlers
            root.setLevel(saved_level)
    return code


def batches_persisted(log: Path) -> list[dict]:
    """The job's ``batch_persisted`` log lines, as dicts, in the order it wrote them."""
    lines = [line[line.index("{") :] for line in log.read_text().splitlines() if '"batch_persisted"' in line]
    return [json.loads(line) for line in lines]


def committed_versions(table_path: Path) -> int:
    """How many commits a Delta table has (0 when it does not exist yet)."""
    log_dir = table_path / "_delta_log"
    return len(list(log_dir.glob("*.json"))) if log_dir.exists() else 0


def _tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


BACKFILL_JOB = REPO / "spark_jobs" / "replay" / "backfill.py"


def start_backfill(conf: Path, *args: str, log: Path, environment: dict[str, str] | None = None) -> subprocess.Popen:
    """Start the backfill job (its own process group, like ``start_persist``)."""
    return subprocess.Popen(
        [sys.executable, str(BACKFILL_JOB), "--conf", str(conf), *args],
        env={**job_environment(), **(environment or {})},
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def run_backfill(conf: Path, *args: str, log: Path, environment: dict[str, str] | None = None) -> int:
    """Run the backfill job to its end in this process (``args``: ``backfill_request_args`` and
    any others); returns its exit code. ``environment``: for the run only."""
    from spark_jobs.replay.backfill import main

    return run_in_process(main, ["--conf", str(conf), *args], log, environment)


def wait_for_event(log: Path, event: str, job: subprocess.Popen, timeout_s: float = 120) -> bool:
    """Wait until the job in process ``job`` has logged ``event`` (a JSON line's "event") to
    ``log``; False when the job ended first (it may have finished quickly), fails the test when
    neither happens within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    needle = f'"event": "{event}"'
    while time.monotonic() < deadline:
        if log.exists() and needle in log.read_text(errors="replace"):
            return True
        if job.poll() is not None:
            return False
        time.sleep(0.1)
    raise AssertionError(f"no {event} line in {log} within {timeout_s:.0f} s; tail:\n{_tail(log)}")
