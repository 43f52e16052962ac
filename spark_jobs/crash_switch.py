"""The jobs' side of the controlled crash points (tidemark.crash_points): count a run's batches,
and die at the named commit.

A PersistBatch calls ``batch_started`` when a batch begins and ``committed(table)`` after each
of its commits; the pipeline calls ``committed("claims")`` after a claim. Without a crash point
(production) every call returns at once.
"""

from __future__ import annotations

import logging
import os
import signal

from tidemark.crash_points import BEFORE_FIRST, CrashPoint, CrashPointReached

log = logging.getLogger("tidemark.persist")


class CrashSwitch:
    """Dies at ``point`` (None: never). ``jvm_pid``: the driver JVM's process id, killed with
    the Python process by the ``exit`` action (asked of the JVM lazily, by the caller's function)."""

    def __init__(self, point: CrashPoint | None, jvm_pid=None):
        self._point = point
        self._jvm_pid = jvm_pid
        self._batch = -1

    @property
    def armed_for_this_batch(self) -> str | None:
        """The commit of the current batch the switch waits for, None when it waits for none."""
        if self._point is None or self._point.batch != self._batch:
            return None
        return self._point.after

    def batch_started(self) -> None:
        """A batch of the run begins: counts it, and dies if the point is before its first commit."""
        self._batch += 1
        self._maybe_die(self._batch, BEFORE_FIRST)

    def committed(self, commit: str, batch_level: bool = True) -> None:
        """``commit`` (a table, or ``claims``) has committed: dies if that is the point.
        ``batch_level`` False: a commit of the run, not of the current batch (the claim)."""
        self._maybe_die(self._batch if batch_level else None, commit)

    def _maybe_die(self, batch: int | None, commit: str) -> None:
        if self._point is None or not self._point.is_at(batch, commit):
            return
        log.warning(
            {"event": "crash_point_reached", "after": commit, "batch": self._point.batch, "action": self._point.action}
        )
        for handler in logging.getLogger().handlers:
            handler.flush()
        if self._point.action == "raise":
            raise CrashPointReached(f"crash point: after {commit} of batch {self._point.batch}")
        # As a lost machine: the JVM first (it would otherwise run its shutdown hooks once
        # Python is gone), then this process; nothing runs after either.
        if self._jvm_pid is not None:
            os.kill(self._jvm_pid(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)
