"""When an alarm is due, and what it says: one builder per occasion, each a callable that takes
the failing task's context and returns the Alarm (or None: nothing a person must hear).

Each reads typed values the DAG's tasks left in XCom (the quality result, the recovery's
result and request, the seal deadline's figures) or the task's identity, never an exception's
or a log's text. The builders are small classes, not closures, so that they say what they are
in a DAG's repr and can be tested alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tidemark_airflow.alert_message import (
    QUALITY,
    Alarm,
    persist_failed_alarm,
    recovery_lost_alarm,
    topics_refresh_failed_alarm,
    unsealed_hour_alarm,
)
from tidemark_airflow.alerts import task_identity

# XCom keys the tasks push before they fail, for the alarm to read.
RECOVERY_RESULT_KEY = "recovery_result"
SEAL_DEADLINE_KEY = "seal_deadline"


@dataclass(frozen=True)
class QualityFindings:
    """The quality DAG's verdict failed and the check itself left no result: an alarm saying
    nothing was checked. Partitions in an alarm status are the ``alarms`` task's to tell
    (tidemark_airflow.quality_alarms: once, with reminders and a "resolved"), so a verdict that
    failed on them sends nothing here."""

    stream: str
    check_task_id: str = "check"

    def __call__(self, context: Any) -> Alarm | None:
        task = task_identity(context)
        result = context["ti"].xcom_pull(task_ids=self.check_task_id)
        if not result:
            return Alarm(
                QUALITY,
                self.stream,
                f"the quality check ({self.check_task_id}) failed: nothing was checked",
                task,
                details={"what_now": f"see the log of task {self.check_task_id} of this run"},
            )
        return None


@dataclass(frozen=True)
class RecoveryLost:
    """The recover task failed with offsets LOST (its result, pushed before it failed).
    ``stream`` None: the request's (a family's recover DAG, the stream a param of the run)."""

    stream: str | None
    validate_task_id: str = "validate"

    def __call__(self, context: Any) -> Alarm | None:
        ti = context["ti"]
        result = ti.xcom_pull(task_ids=ti.task_id, key=RECOVERY_RESULT_KEY)
        request = ti.xcom_pull(task_ids=self.validate_task_id)
        if not result or not request:
            return None
        stream = self.stream or (request.get("stream") if isinstance(request, dict) else None) or "unknown"
        return recovery_lost_alarm(stream, request, result, task_identity(context))


@dataclass(frozen=True)
class PersistFailed:
    """The persist task failed its last try (on_failure_callback runs after the retries)."""

    stream: str

    def __call__(self, context: Any) -> Alarm | None:
        error = context.get("exception")
        return persist_failed_alarm(
            self.stream, None if error is None else type(error).__name__, task_identity(context)
        )


@dataclass(frozen=True)
class FamilyMembersFailed:
    """A family's persist verdict failed: one persist-failed alarm per member whose run failed
    (the verdict's ``failed_members`` XCom), naming the member as its own persist DAG's would."""

    def __call__(self, context: Any) -> list[Alarm]:
        from tidemark_airflow.family_verdict import FAILED_MEMBERS_KEY

        ti = context["ti"]
        failed = ti.xcom_pull(task_ids=ti.task_id, key=FAILED_MEMBERS_KEY) or []
        task = task_identity(context)
        return [persist_failed_alarm(member["stream"], member["error"], task) for member in failed]


@dataclass(frozen=True)
class TopicsRefreshFailed:
    """A family's topic refresh failed its last try."""

    family: str

    def __call__(self, context: Any) -> Alarm | None:
        error = context.get("exception")
        return topics_refresh_failed_alarm(
            self.family, None if error is None else type(error).__name__, task_identity(context)
        )


@dataclass(frozen=True)
class UnsealedHours:
    """The seal deadline task found hours not sealed within the bound (its figures in XCom)."""

    stream: str

    def __call__(self, context: Any) -> Alarm | None:
        ti = context["ti"]
        figures = ti.xcom_pull(task_ids=ti.task_id, key=SEAL_DEADLINE_KEY)
        if not figures or not figures.get("overdue_ms"):
            return None
        return unsealed_hour_alarm(
            self.stream,
            figures["overdue_ms"],
            figures["newest_sealed_ms"],
            figures["bound_ms"],
            figures["now_ms"],
            task_identity(context),
        )


@dataclass(frozen=True)
class FamilyChecksFailed:
    """A family's quality verdict failed: for each member whose check itself failed (the check
    task's ``failed``), an alarm saying nothing was checked for it. Members in an alarm status
    are the ``alarms`` task's to tell, as for a stream."""

    check_task_id: str = "check"

    def __call__(self, context: Any) -> list[Alarm]:
        task = task_identity(context)
        result = context["ti"].xcom_pull(task_ids=self.check_task_id)
        if not result:
            return [
                Alarm(
                    QUALITY,
                    context["dag"].dag_id,
                    f"the family's quality check ({self.check_task_id}) failed: nothing was checked",
                    task,
                    details={"what_now": f"see the log of task {self.check_task_id} of this run"},
                )
            ]
        return [
            Alarm(
                QUALITY,
                member["stream"],
                f"the quality check ({self.check_task_id}) failed: nothing was checked",
                task,
                details={"error": member["error"], "what_now": f"see the log of task {self.check_task_id} of this run"},
            )
            for member in result.get("failed", [])
        ]


@dataclass(frozen=True)
class FamilyUnsealedHours:
    """A family's seal deadline task found members with hours not sealed within the bound (their
    figures in XCom, by member): one alarm per member."""

    def __call__(self, context: Any) -> list[Alarm]:
        ti = context["ti"]
        overdue = ti.xcom_pull(task_ids=ti.task_id, key=SEAL_DEADLINE_KEY) or {}
        task = task_identity(context)
        return [
            unsealed_hour_alarm(
                member,
                figures["overdue_ms"],
                figures["newest_sealed_ms"],
                figures["bound_ms"],
                figures["now_ms"],
                task,
            )
            for member, figures in sorted(overdue.items())
            if figures.get("overdue_ms")
        ]
