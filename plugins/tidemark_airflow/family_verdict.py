"""The last task of a family's persist tick: the tick failed for the members whose run failed, each
named, and each gets its own alarm (alert_occasions.FamilyMembersFailed). The persist drivers
succeed whenever they ran, so that the other members' sealed-hour events are recorded."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperator

# XCom key of the verdict's failed members ([{"stream", "error"}]), for their alarms.
FAILED_MEMBERS_KEY = "failed_members"


class FamilyPersistVerdictOperator(BaseOperator):
    """Reads the groups ``look`` made and each ``persist`` driver's result (by map index): a
    member whose driver reported it failed, or whose driver did not run, failed. Pushes them
    (``failed_members``) and fails naming each; succeeds when none did."""

    def __init__(self, *, look_task_id: str = "look", persist_task_id: str = "persist", **kwargs: Any) -> None:
        kwargs.setdefault("trigger_rule", "all_done")
        super().__init__(**kwargs)
        self.look_task_id = look_task_id
        self.persist_task_id = persist_task_id

    def execute(self, context: Any) -> dict:
        from airflow.sdk.exceptions import AirflowException

        from tidemark.family_persist_result import FamilyPersistResult

        ti = context["ti"]
        groups = ti.xcom_pull(task_ids=self.look_task_id) or []
        failed: list[dict[str, str]] = []
        for index, group in enumerate(groups):
            reported = ti.xcom_pull(task_ids=self.persist_task_id, map_indexes=index)
            if reported is None:
                failed += [
                    {
                        "stream": name,
                        "error": f"its driver ({self.persist_task_id}[{index}]) did not run; see that task's log",
                    }
                    for name in group
                ]
                continue
            failed += [
                {"stream": outcome.stream, "error": outcome.error or f"exit status {outcome.exit_code}"}
                for outcome in FamilyPersistResult.from_json(reported).members
            ]
        persisted = sum(len(group) for group in groups) - len(failed)
        if failed:
            ti.xcom_push(key=FAILED_MEMBERS_KEY, value=failed)
            raise AirflowException(
                f"{len(failed)} members failed, each alone ({persisted} persisted): "
                + "; ".join(f"{member['stream']}: {member['error']}" for member in failed)
            )
        self.log.info("%d members persisted in %d drivers, none failed", persisted, len(groups))
        return {"persisted": persisted, "drivers": len(groups)}
