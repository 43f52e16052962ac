"""Where a command's time went, step by step: ``tidemark demo`` prints it at its end, so a slow
first run says which step was slow (the jars, Airflow's start, a DAG run) instead of just taking long."""

from __future__ import annotations

import time
from collections.abc import Callable


class StepClock:
    """Times named steps: ``step(name)`` ends the step before and starts ``name``; ``lines()``
    lists every step's seconds, the running one included, and the total. ``clock``: seconds."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._started = clock()
        self._steps: list[tuple[str, float]] = []
        self._current: tuple[str, float] | None = None

    def step(self, name: str) -> None:
        now = self._clock()
        if self._current is not None:
            self._steps.append((self._current[0], now - self._current[1]))
        self._current = (name, now)

    def seconds(self, now: float | None = None) -> list[tuple[str, float]]:
        """Every step's name and seconds until ``now`` (the clock's time), the running one
        included, in order."""
        now = self._clock() if now is None else now
        steps = list(self._steps)
        if self._current is not None:
            steps.append((self._current[0], now - self._current[1]))
        return steps

    def lines(self) -> list[str]:
        now = self._clock()
        steps = self.seconds(now)
        width = max((len(name) for name, _ in steps), default=0)
        return [f"  {name:<{width}}  {seconds:6.1f} s" for name, seconds in steps] + [
            f"  {'total':<{width}}  {now - self._started:6.1f} s"
        ]
