"""The seal deadline: every event-time hour [H, H + 1h) of a stream must be sealed by wall-clock
time H + 1h + ``alerts.unsealed_hour_after``. Checked on the quality DAG's schedule (its cron
runs also when no hour seals, which is exactly when this matters), so an alarm comes at most
one quality interval after the deadline.

Why not Airflow's Deadline Alerts (airflow.sdk DeadlineAlert, in 3.3.2): a deadline there is
about one DAG run (its logical date, queue time or a fixed time, plus an interval) finishing;
an hour that does not seal is not a run that is late, and the stream's runs all succeed while
a frozen partition holds the global watermark back.

Reads only the newest seal from the lake's ``seals`` table (deltalake, no Spark).
"""

from __future__ import annotations

import time
from typing import Any

from tidemark.stream_config import StreamConfig
from tidemark_airflow.alert_message import overdue_hours


def seal_deadline_figures(stream: StreamConfig, now_ms: int | None = None) -> dict[str, Any]:
    """{"newest_sealed_ms", "overdue_ms": [hour starts], "bound_ms", "now_ms"} for ``stream``
    (which must have ``alerts.unsealed_hour_after``); no ledger yet: nothing overdue."""
    from connectors.lake_reader import LedgerMissingError, read_stream_overview

    assert stream.alerts is not None and stream.alerts.unsealed_hour_after_ms is not None
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    bound_ms = stream.alerts.unsealed_hour_after_ms
    try:
        newest = read_stream_overview(
            stream, now_ms=now_ms, window_ms=stream.quality.stall_timeout_ms, ask_log=False
        ).last_sealed_hour_ms
    except LedgerMissingError:
        newest = None
    return {
        "newest_sealed_ms": newest,
        "overdue_ms": overdue_hours(newest, bound_ms, now_ms),
        "bound_ms": bound_ms,
        "now_ms": now_ms,
    }
