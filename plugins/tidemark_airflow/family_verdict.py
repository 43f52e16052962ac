"""The last task of a family's persist or maintenance tick: the tick failed for the members whose
run failed, each named (and, for persist, each its own alarm: alert_occasions.FamilyMembersFailed).
The drivers succeed whenever they ran, so that the other members' sealed-hour events are recorded."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperator

# XCom key of the verdict's failed members ([{"stream", "error"}]), for their alarms.
FAILED_MEMBERS_KEY = "failed_members"


class FamilyVerdictOperator(BaseOperator):
    """Reads the groups ``look`` made and each driver's result (``driver_task_id``'s, by map
    index): a member whose driver reported it failed, or whose driver did not run, failed.
    Pushes them (``failed_members``) and fails naming each; succeeds when none did."""

    def __init__(self, *, look_task_id: str = "look", driver_task_id: str = "persist", **kwargs: Any) -> None:
        kwargs.setdefault("trigger_rule", "all_done")
        super().__init__(**kwargs)
        self.look_task_id = look_task_id
        self.driver_task_id = driver_task_id

    def execute(self, context: Any) -> dict:
        from airflow.sdk.exceptions import AirflowException

        from tidemark.family_driver_result import FamilyDriverResult

        ti = context["ti"]
        groups = ti.xcom_pull(task_ids=self.look_task_id) or []
        failed: list[dict[str, str]] = []
        for index, group in enumerate(groups):
            reported = ti.xcom_pull(task_ids=self.driver_task_id, map_indexes=index)
            if reported is None:
                failed += [
                    {
                        "stream": name,
                        "error": f"its driver ({self.driver_task_id}[{index}]) did not run; see that task's log",
                    }
                    for name in group
                ]
                continue
            failed += [
                {"stream": outcome.stream, "error": outcome.error or f"exit status {outcome.exit_code}"}
                for outcome in FamilyDriverResult.from_json(reported).members
            ]
        persisted = sum(len(group) for group in groups) - len(failed)
        if failed:
            ti.xcom_push(key=FAILED_MEMBERS_KEY, value=failed)
            raise AirflowException(
                f"{len(failed)} members failed, each alone ({persisted} succeeded): "
                + "; ".join(f"{member['stream']}: {member['error']}" for member in failed)
            )
        self.log.info("%d members in %d drivers, none failed", persisted, len(groups))
        return {"persisted": persisted, "drivers": len(groups)}
