"""The live driver's beat (tidemark.live_batch_wait.DriverBeat), kept where its checkpoint is.

While a live run's query runs, a daemon thread rewrites ``<checkpoint>/_tidemark_driver_beat.json``
every ``persist.driver_beat_interval`` with the beat count one higher. The first beat is written
before the query starts, so every batch the run plans has a beat beside it; the last one says
``stopped``, however the query ended (the pipeline's ``finally``). A killed driver writes
nothing more: its silence is the sign a claimer reads (tidemark.live_batch_wait).

The file sits in the checkpoint's folder because that is what every claimer already reads
(the live batch in flight), on whatever file system it is: a local path is replaced atomically
(``os.replace``); on S3 each beat is one PUT (atomic too): 17,280 a day for a continuous job at
the default 5 s, a few per run for scheduled runs.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid

import msgspec

from tidemark.live_batch_wait import DriverBeat

log = logging.getLogger("tidemark.persist")

BEAT_FILE = "_tidemark_driver_beat.json"
READ_ATTEMPTS = 5


class DriverBeatWriter:
    """Beats for the live run whose checkpoint is ``checkpoint``, every ``interval_ms``, from
    ``start()`` to ``stop()``. ``spark``: the job's session (its Hadoop file system, for a
    checkpoint that is not a local path)."""

    def __init__(self, spark, checkpoint: str, interval_ms: int):
        self._spark = spark
        self._checkpoint = checkpoint
        self._interval_ms = interval_ms
        self._run_id = uuid.uuid4().hex[:12]
        self._beat = 0
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """The first beat, written before this returns; then one every interval."""
        self._write(stopped=False)
        self._thread = threading.Thread(target=self._run, name="tidemark-driver-beat", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """The last beat: ``stopped``. A write that fails is logged, not raised: the job's own
        outcome is what its caller must see (a silent beat reads as stopped soon enough)."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
        try:
            self._write(stopped=True)
        except Exception as error:  # the job's exception, if any, is the one that matters
            log.warning({"event": "driver_beat_not_written", "detail": f"{type(error).__name__}: {error}"})

    def _run(self) -> None:
        while not self._stopping.wait(self._interval_ms / 1000):
            try:
                self._write(stopped=False)
            except Exception as error:
                # A store that refused one write: the next beat tries again. A claimer that
                # reads the silence yields, which is always safe.
                log.warning({"event": "driver_beat_not_written", "detail": f"{type(error).__name__}: {error}"})

    def _write(self, stopped: bool) -> None:
        self._beat += 1
        beat = DriverBeat(self._run_id, self._beat, self._interval_ms, stopped)
        _write_file(self._spark, f"{self._checkpoint.rstrip('/')}/{BEAT_FILE}", msgspec.json.encode(beat))


def read_driver_beat(spark, checkpoint: str) -> DriverBeat | None:
    """The beat of the live run checkpointed at ``checkpoint``; None when no run has beaten there
    (a run of a tidemark before beats, or none since the checkpoint began)."""
    data = _read_file(spark, f"{checkpoint.rstrip('/')}/{BEAT_FILE}")
    return None if data is None else msgspec.json.decode(data, type=DriverBeat)


def _local(path: str) -> str | None:
    """The local file system path of ``path``, None when it is on another file system."""
    if "://" not in path:
        return path
    return path.removeprefix("file://") if path.startswith("file://") else None


def _write_file(spark, path: str, data: bytes) -> None:
    local = _local(path)
    if local is not None:
        os.makedirs(os.path.dirname(local), exist_ok=True)
        temporary = f"{local}.{os.getpid()}.tmp"
        with open(temporary, "wb") as out:
            out.write(data)
        os.replace(temporary, local)  # a reader sees the old beat or the new one, never half of one
        return
    from spark_jobs.streaming_checkpoint import hadoop_file_system

    hadoop_path, fs = hadoop_file_system(spark, path)
    stream = fs.create(hadoop_path, True)
    try:
        stream.write(bytearray(data))
    finally:
        stream.close()


def _read_file(spark, path: str) -> bytes | None:
    local = _local(path)
    if local is not None:
        try:
            with open(local, "rb") as handle:
                return handle.read()
        except FileNotFoundError:
            return None
    from spark_jobs.streaming_checkpoint import read_text

    # The beat is rewritten every interval: on S3, a rewrite between S3A's look at the object and
    # its read of it fails the read (412, the object changed under it). The next read finds the
    # new beat whole.
    for attempt in range(READ_ATTEMPTS):
        try:
            text = read_text(spark, path)
            return None if text is None else text.encode()
        except Exception:
            if attempt == READ_ATTEMPTS - 1:
                raise
            time.sleep(0.1)
    raise AssertionError("unreachable")
