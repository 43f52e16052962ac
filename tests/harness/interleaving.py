"""Placing one job's step exactly between two of another's: the running job pauses at a crash
point whose action is ``pause`` (tidemark.crash_points), the test does its step, then lets it go
on. The job and the test meet through files in one folder, so the paused job may be another
process."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

from tidemark.crash_points import CrashPoint
from tidemark.persist_run_summary import PersistRunSummary


def pause_at(folder: Path, after: str, batch: int) -> CrashPoint:
    """The pause after ``after`` of the run's batch ``batch``, signalled through ``folder``."""
    return CrashPoint(after, batch, "pause", str(folder))


def wait_until_paused(point: CrashPoint, job: subprocess.Popen, log: Path, timeout_s: float = 180) -> None:
    """Wait until the job in ``job`` has paused at ``point``; fails the test, with the log's
    tail, when it ends or does not get there in time."""
    deadline = time.monotonic() + timeout_s
    while not Path(point.paused_file).exists():
        if job.poll() is not None:
            raise AssertionError(f"the job ended ({job.returncode}) before {point}; tail:\n{_tail(log)}")
        if time.monotonic() > deadline:
            raise AssertionError(f"the job did not reach {point} within {timeout_s:.0f} s; tail:\n{_tail(log)}")
        time.sleep(0.05)


def resume(point: CrashPoint) -> None:
    """Let the job paused at ``point`` go on."""
    Path(point.resume_file).touch()


class ResumeWhenWaiting:
    """Resumes the job paused at ``point`` as soon as ``log`` (another job's, running in the
    test's own thread meanwhile) says that job waits for the paused one's batch; ``waited``
    tells whether it came to that. ``point`` None: nothing is paused, only ``waited`` is told."""

    NEEDLE = '"event": "waiting_for_live_batch"'

    def __init__(self, point: CrashPoint | None, log: Path):
        self._point = point
        self._log = log
        self._done = threading.Event()
        self.waited = False
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> ResumeWhenWaiting:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join(5)

    def _watch(self) -> None:
        while not self._done.is_set():
            if self._log.exists() and self.NEEDLE in self._log.read_text(errors="replace"):
                self.waited = True
                if self._point is not None:
                    resume(self._point)
                return
            time.sleep(0.05)


def _tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else "(no log)"


class LiveInThread:
    """The live persist job (``available_now``) of the stream in ``conf``, run in a thread of the
    test's process on its Spark session: the same pipeline as spark-submit runs, its own streaming
    query, its crash ``points`` (pauses) given directly. Its ``mode: live`` log lines go to
    ``log`` whatever else the process logs meanwhile (a claimer run in the test's thread sets up
    its own logging). ``join()`` returns the run's summary or raises what the run raised.

    One JVM for live and the claimers saves a JVM start per case; the claims, the checkpoint
    reads and Delta's commits go through the files exactly as between two drivers. Separate
    driver processes are tested where it matters that one dies (tests/integration/test_lake_on_s3.py)."""

    def __init__(self, conf: Path, log: Path, points: tuple[CrashPoint, ...] = ()):
        self._conf = conf
        self._log = log
        self._points = points
        self._summary: PersistRunSummary | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="live-in-thread", daemon=True)

    def start(self) -> LiveInThread:
        self._thread.start()
        return self

    def alive(self) -> bool:
        return self._thread.is_alive()

    def join(self, timeout_s: float = 300) -> PersistRunSummary | None:
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            raise AssertionError(f"the live run did not end within {timeout_s:.0f} s; tail:\n{_tail(self._log)}")
        if self._error is not None:
            raise self._error
        return self._summary

    def _run(self) -> None:
        import logging

        from spark_jobs.persist.job import run_persist
        from tidemark.stream_config import load_stream
        from tidemark.structured_log import JsonLineFormatter

        handler = logging.FileHandler(self._log)
        handler.setFormatter(JsonLineFormatter())
        handler.addFilter(_live_lines)
        persist = logging.getLogger("tidemark.persist")
        level = persist.level
        persist.setLevel(logging.INFO)  # whatever the root's level is at the moment
        persist.addHandler(handler)
        try:
            stream = load_stream(self._conf, "telemetry")
            self._summary = run_persist(
                stream, "available_now", stream.persist.max_records_per_batch, crash_points=self._points
            )
        except BaseException as error:  # handed to join()
            self._error = error
        finally:
            persist.removeHandler(handler)
            persist.setLevel(level)
            handler.close()


def _live_lines(record) -> bool:
    return isinstance(record.msg, dict) and (
        record.msg.get("mode") == "live" or str(record.msg.get("event", "")).startswith("crash_point")
    )


def wait_until_paused_in_thread(point: CrashPoint, live: LiveInThread, log: Path, timeout_s: float = 180) -> None:
    """``wait_until_paused`` for a live run in a thread."""
    deadline = time.monotonic() + timeout_s
    while not Path(point.paused_file).exists():
        if not live.alive():
            live.join(0)
            raise AssertionError(f"the live run ended before {point}; tail:\n{_tail(log)}")
        if time.monotonic() > deadline:
            raise AssertionError(f"the live run did not reach {point} within {timeout_s:.0f} s; tail:\n{_tail(log)}")
        time.sleep(0.05)
