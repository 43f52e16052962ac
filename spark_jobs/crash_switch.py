"""The jobs' side of the controlled crash points (tidemark.crash_points): count a run's batches,
and die, or pause, at the named points.

A PersistBatch calls ``batch_started`` when a batch begins, ``decided`` once it knows how it
writes, and ``committed(table)`` after each of its commits; the pipeline calls
``committed("claims")`` after a claim. Without crash points (production) every call returns at
once.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from pathlib import Path

from tidemark.crash_points import BEFORE_FIRST, DECIDED, PAUSE_LIMIT_S, CrashPoint, CrashPointReached

log = logging.getLogger("tidemark.persist")


class CrashSwitch:
    """Dies or pauses at ``points`` (none: never). ``jvm_pid``: the driver JVM's process id,
    killed with the Python process by the ``exit`` action (asked of the JVM lazily, by the
    caller's function)."""

    def __init__(self, points: tuple[CrashPoint, ...] = (), jvm_pid=None):
        self._points = tuple(points)
        self._jvm_pid = jvm_pid
        self._batch = -1

    @property
    def armed_for_this_batch(self) -> str | None:
        """The commit of the current batch a point waits for (the first, if several), None when
        none does."""
        return next((p.after for p in self._points if p.batch == self._batch), None)

    def batch_started(self) -> None:
        """A batch of the run begins: counts it, and fires a point before its first commit."""
        self._batch += 1
        self._reach(self._batch, BEFORE_FIRST)

    def decided(self) -> None:
        """The batch knows how it writes (what it leaves out, append or insert-only); nothing of
        it is committed yet."""
        self._reach(self._batch, DECIDED)

    def committed(self, commit: str, batch_level: bool = True) -> None:
        """``commit`` (a table, or ``claims``) has committed: fires a point there.
        ``batch_level`` False: a commit of the run, not of the current batch (the claim)."""
        self._reach(self._batch if batch_level else None, commit)

    def _reach(self, batch: int | None, point: str) -> None:
        for crash in self._points:
            if crash.is_at(batch, point):
                self._fire(crash, point)

    def _fire(self, crash: CrashPoint, point: str) -> None:
        log.warning({"event": "crash_point_reached", "after": point, "batch": crash.batch, "action": crash.action})
        for handler in logging.getLogger().handlers:
            handler.flush()
        if crash.action == "pause":
            _pause(crash)
            return
        if crash.action == "raise":
            raise CrashPointReached(f"crash point: after {point} of batch {crash.batch}")
        # As a lost machine: the JVM first (it would otherwise run its shutdown hooks once
        # Python is gone), then this process; nothing runs after either.
        if self._jvm_pid is not None:
            os.kill(self._jvm_pid(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)


def _pause(crash: CrashPoint) -> None:
    """Say the job paused, and wait for the test to let it go on."""
    Path(crash.folder).mkdir(parents=True, exist_ok=True)
    Path(crash.paused_file).write_text(json.dumps({"pid": os.getpid()}))
    deadline = time.monotonic() + PAUSE_LIMIT_S
    while not Path(crash.resume_file).exists():
        if time.monotonic() > deadline:
            raise CrashPointReached(f"paused after {crash.after} of batch {crash.batch} and never resumed")
        time.sleep(0.02)
    log.warning({"event": "crash_point_resumed", "after": crash.after, "batch": crash.batch})
