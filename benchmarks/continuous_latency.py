"""Scenario 5 of the catch-up benchmark: how long a record takes from the log to the events table
while the persist job runs in continuous mode and a producer writes at the demo's rates.

``measure_latency`` starts the job (its own process group), waits until its query runs, starts the
producer, and polls the events table about every second with the ``deltalake`` package (no Spark
job) until the producer is done and every record it produced is visible, or a grace period is
over; then stops the job as Airflow stops a task (SIGTERM to its process group) and waits for it.

For every record (source_partition, source_offset), its visible time is the start of the first
poll that saw it: the real moment lies up to one poll interval earlier. Latency = visible time −
the record's log timestamp (ms, UTC). The caller makes the log timestamp the produce time: the
live generator stamps a record with its event time and sends it when that time comes, so with no
disorder (--max-disorder 0s) the two agree within the producer's pacing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.catch_up_figures import percentile
from benchmarks.process_memory import wait_sampling_peak_rss

POLL_INTERVAL_S = 1.0
STOP_TIMEOUT_S = 60.0


class EventsVisibility:
    """When each record of an events table became visible to a reader, polled version by version.

    ``poll()`` reads the table only when its version moved; ``seen`` maps (partition, offset) to
    (log timestamp ms, visible ms). ``clock`` returns ms since the epoch (injected for tests).
    """

    def __init__(self, events_path: str, clock: Callable[[], int] = lambda: time.time_ns() // 1_000_000):
        self._path = events_path
        self._clock = clock
        self._version: int | None = None
        self.seen: dict[tuple[int, int], tuple[int, int]] = {}

    def poll(self) -> int:
        """Read the table if it has a new version; returns how many records became visible."""
        import pyarrow as pa
        from deltalake import DeltaTable

        polled_ms = self._clock()
        if not DeltaTable.is_deltatable(self._path):
            return 0
        table = DeltaTable(self._path)
        if table.version() == self._version:
            return 0
        self._version = table.version()
        rows = pa.table(table.scan(columns=["source_partition", "source_offset", "log_timestamp"]))
        log_ms = rows.column("log_timestamp").cast(pa.timestamp("ms", tz="UTC")).cast(pa.int64()).to_pylist()
        new = 0
        for partition, offset, logged_ms in zip(
            rows.column("source_partition").to_pylist(), rows.column("source_offset").to_pylist(), log_ms
        ):
            if (partition, offset) not in self.seen:
                self.seen[(partition, offset)] = (logged_ms, polled_ms)
                new += 1
        return new


def latency_figures(seen: dict[tuple[int, int], tuple[int, int]], produced: int) -> dict:
    """p50, p99 and max latency (seconds) over ``produced`` records; a produced record that never
    became visible counts as infinitely late, so it can only raise the percentiles."""
    latencies = [(visible - logged) / 1000 for logged, visible in seen.values()]
    not_visible = max(0, produced - len(latencies))
    everything = latencies + [float("inf")] * not_visible
    return {
        "produced": produced,
        "visible": len(latencies),
        "not_visible": not_visible,
        "p50_seconds": _rounded(percentile(everything, 0.50)),
        "p99_seconds": _rounded(percentile(everything, 0.99)),
        "max_seconds": _rounded(max(everything, default=None)),
    }


def _rounded(seconds: float | None) -> float | str | None:
    if seconds is None:
        return None
    return "never" if seconds == float("inf") else round(seconds, 1)


def measure_latency(
    job_command: list[str],
    producer_command: list[str],
    env: dict,
    cwd: Path,
    events_path: str,
    run_dir: Path,
    grace_s: float,
    start_timeout_s: float = 300.0,
) -> dict:
    """Run the scenario (see the module docstring): ``job_command`` is the persist job in
    continuous mode, ``producer_command`` a producer that ends by itself and prints the generator's
    JSON summary; both run in ``cwd`` with ``env``, their logs in ``run_dir``. After the producer
    ends, polling goes on for at most ``grace_s`` seconds.

    Returns latency_figures plus the job's peak RSS (MB), its exit code after SIGTERM and how long
    it took to stop; raises RuntimeError (with the last lines of the failing process's log) when
    the job stops on its own, its query does not start within ``start_timeout_s``, or the
    producer fails. The job is stopped in every case."""
    run_dir.mkdir(parents=True, exist_ok=True)
    job_log = run_dir / "job.log"
    peak: dict[str, int] = {}
    with job_log.open("w") as log:
        job = subprocess.Popen(
            job_command, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    sampler = threading.Thread(target=lambda: peak.update(rss=wait_sampling_peak_rss(job)), daemon=True)
    sampler.start()
    visibility = EventsVisibility(events_path)
    producer = None
    try:
        _wait_for_query(job, job_log, start_timeout_s)
        producer_log = run_dir / "producer.log"
        with producer_log.open("w") as out:
            producer = subprocess.Popen(producer_command, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        produced = None
        grace_until = None
        while True:
            started = time.monotonic()
            visibility.poll()
            if job.poll() is not None:
                raise RuntimeError(f"the persist job ended on its own (exit {job.returncode}):\n{_tail(job_log)}")
            if produced is None and producer.poll() is not None:
                if producer.returncode != 0:
                    raise RuntimeError(f"the producer failed (exit {producer.returncode}):\n{_tail(producer_log)}")
                produced = _produced_records(producer_log)
                grace_until = time.monotonic() + grace_s
            if produced is not None and (len(visibility.seen) >= produced or time.monotonic() > grace_until):
                break
            time.sleep(max(0.0, POLL_INTERVAL_S - (time.monotonic() - started)))
    finally:
        if producer is not None and producer.poll() is None:  # only when the job failed first
            producer.terminate()
            producer.wait(30)
        stop_s, exit_code = _stop(job)
        sampler.join(timeout=10)
    return {
        **latency_figures(visibility.seen, produced),
        "peak_rss_megabytes": round(peak.get("rss", 0) / 1e6),
        "stopped_in_seconds": round(stop_s, 1),
        "exit_code_after_sigterm": exit_code,
    }


def _wait_for_query(job: subprocess.Popen, job_log: Path, timeout_s: float) -> None:
    """Until the job logs that its streaming query started (JVM up, source registered)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if job.poll() is not None:
            raise RuntimeError(
                f"the persist job ended before its query started (exit {job.returncode}):\n{_tail(job_log)}"
            )
        if '"query_started"' in job_log.read_text(errors="replace"):
            return
        time.sleep(0.5)
    raise RuntimeError(f"the persist job's query did not start within {timeout_s:.0f} s:\n{_tail(job_log)}")


def _stop(job: subprocess.Popen) -> tuple[float, int | None]:
    """SIGTERM to the job's process group (the JVM and Python workers with it), as Airflow stops
    a task, then wait until every process of the group is gone, not only the job's own (the JVM
    runs its shutdown hooks after the Python driver has died); SIGKILL to the group if anything
    is left after STOP_TIMEOUT_S. Returns (seconds until the group was gone, the job's exit code)."""
    started = time.monotonic()
    if job.poll() is None:
        os.killpg(job.pid, signal.SIGTERM)
    deadline = started + STOP_TIMEOUT_S
    while _group_alive(job.pid) and time.monotonic() < deadline:
        job.poll()  # reap the job itself, or it stays in the group as a zombie
        time.sleep(0.2)
    if _group_alive(job.pid):
        os.killpg(job.pid, signal.SIGKILL)
    job.wait(30)
    return time.monotonic() - started, job.returncode


def _group_alive(group_id: int) -> bool:
    try:
        os.killpg(group_id, 0)
    except ProcessLookupError:
        return False
    return True


def _produced_records(producer_log: Path) -> int:
    """The generator's count of records produced, from its one-line JSON summary."""
    for line in reversed(producer_log.read_text(errors="replace").splitlines()):
        if line.startswith("{"):
            summary = json.loads(line)
            return summary["records"] + summary["bad_records"]
    raise RuntimeError(f"the producer wrote no summary line:\n{_tail(producer_log)}")


def _tail(log: Path, lines: int = 20) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])[-3000:]
