"""How a maintenance commit meets a concurrent writer: it retries, then yields.

A maintenance commit (a compaction, a claims settlement) changes how the lake is stored, never
what it says, so it may always wait: when a writer of records commits first and Delta's conflict
check fails this commit, it runs again ``ATTEMPTS`` times, waiting longer each time, and then
leaves the work to the next maintenance run. A writer of records never waits for maintenance.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from spark_jobs.lake.delta_conflicts import delta_conflicts

log = logging.getLogger("tidemark.maintenance")

ATTEMPTS = 5
FIRST_RETRY_WAIT_S = 0.5

T = TypeVar("T")


def retried(commit: Callable[[], T], event: str, fields: dict) -> tuple[T | None, int]:
    """``commit()``'s value and the retries it took; (None, ATTEMPTS) when every attempt lost to
    a concurrent writer. Each loss is one warning line: ``event`` with ``fields``."""
    conflicts = delta_conflicts()  # before the commit: makes PySpark raise Delta's own classes
    for attempt in range(ATTEMPTS):
        try:
            return commit(), attempt
        except conflicts as error:
            log.warning(
                {
                    "event": event,
                    **fields,
                    "attempt": attempt + 1,
                    "detail": f"{type(error).__name__}: a concurrent writer committed first; "
                    + ("retrying" if attempt + 1 < ATTEMPTS else "left for the next maintenance run"),
                }
            )
            time.sleep(FIRST_RETRY_WAIT_S * 2**attempt)
    return None, ATTEMPTS
