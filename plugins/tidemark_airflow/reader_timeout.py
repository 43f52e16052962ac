"""The Airflow execution_timeout of every task that reads a stream's lake: the quality run, the
sweep, a backfill (it compares with live), the offline-device detector.

It is ``maintenance.reader_timeout``: the bound tidemark.maintenance_settings proves VACUUM's
retention against. A reader that ran longer could meet a file VACUUM deleted; Airflow stops it
first, and its retries start on a fresh snapshot.
"""

from __future__ import annotations

from datetime import timedelta

from tidemark.stream_config import StreamConfig


def reader_timeout(stream: StreamConfig) -> timedelta:
    return timedelta(milliseconds=stream.maintenance.reader_timeout_ms)
