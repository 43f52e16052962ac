"""The quality DAG's ``alarms`` task: what a person must hear after a quality run, sent once.

The stream's alarm memory (tidemark.alarm_memory.AlarmMemory) lives in the Airflow Variable
``tidemark_alarms__<stream>`` (the sweep's, which judges completeness only, in
``tidemark_alarms__<stream>__sweep``: a sweep that finds no hole must not resolve a STOP),
written as the memory's own JSON: a person can read it under Admin → Variables, and deleting it
makes every partition still in an alarm status raise again at the next run. Each DAG runs one at
a time (max_active_runs=1), so two runs never race for one memory.

A run that finds nothing new sends nothing. When every message of a run fails to reach every
receiver, the memory is not updated, so the same messages are due at the next run: an outage
of the mail server delays an alarm, it does not swallow it.
"""

from __future__ import annotations

import time
from typing import Any

import msgspec

from tidemark.alarm_memory import AlarmMemory, due_notices
from tidemark.quality_summary import quality_summary_from
from tidemark.stream_config import StreamConfig
from tidemark_airflow.alert_message import notice_alarms
from tidemark_airflow.alerts import AlarmNotifier, task_identity


def memory_key(stream: str, checker: str = "quality") -> str:
    """The Airflow Variable that holds the alarm memory of ``stream``'s ``checker`` (quality or sweep)."""
    return f"tidemark_alarms__{stream}" + ("" if checker == "quality" else f"__{checker}")


def send_due_alarms(
    stream: StreamConfig, result: Any, context: Any, now_ms: int | None = None, checker: str = "quality"
) -> dict:
    """Send the messages the quality run's ``result`` (its summary, from XCom) makes due at
    ``now_ms`` (default: now), update the memory, and return what was due and sent:
    ``{"notices": [...], "messages": [subject, ...], "delivered": [receivers that took each]}``.
    Nothing (and the memory untouched) when the run left no result: that is the verdict's alarm."""
    from airflow.sdk import Variable

    if not result or stream.alerts is None:
        return {"notices": [], "messages": [], "delivered": []}
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    summary = quality_summary_from(result, "the quality task's result (XCom)")
    key = memory_key(stream.name, checker)
    memory = AlarmMemory.decode(Variable.get(key, default=None))
    statuses = {p.partition: p.status.value for p in summary.partitions}
    notices, after = due_notices(memory, statuses, now_ms, stream.alerts.remind_every_ms)
    alarms = notice_alarms(summary, notices, now_ms, task_identity(context))
    notifier = AlarmNotifier(alerts=stream.alerts, build=lambda _: None)
    delivered = [notifier.deliver(alarm, context) for alarm in alarms]
    if alarms and not any(delivered):
        notifier.log.warning(
            "No receiver took this run's %d alarm message(s); they are due again at the next quality run",
            len(alarms),
        )
    elif after != memory:
        Variable.set(key, after.encode(), description=f"tidemark: what {stream.name}'s alarms have told (do not edit)")
    return {
        "notices": msgspec.to_builtins(notices),
        "messages": [alarm.subject for alarm in alarms],
        "delivered": delivered,
    }


def send_members_alarms(conf_path: str, result: Any, context: Any, checker: str = "quality") -> dict:
    """``send_due_alarms`` for each member a family's check or sweep summarised (``result``:
    {"summaries": {member: summary}, ...}), each with its own memory; by member."""
    from tidemark.stream_config import load_streams

    streams = load_streams(conf_path)
    return {
        member: send_due_alarms(streams[member], summary, context, checker=checker)
        for member, summary in sorted((result or {}).get("summaries", {}).items())
        if member in streams
    }
