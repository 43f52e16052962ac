"""The first task of a family's persist or maintenance tick: which members have anything to do,
decided without Spark for all of them at once, dealt into the drivers that will do it."""

from __future__ import annotations

import os
import time
from abc import abstractmethod
from typing import Any

from airflow.sdk import BaseOperator

# Switches that make a run do something a look at the log cannot see (as for one stream's look).
_RUN_SWITCHES = ("TIDEMARK_CHAOS_FREEZE", "TIDEMARK_CHAOS_THROTTLE", "TIDEMARK_CRASH_AT")


class FamilyLookOperator(BaseOperator):
    """Looks at every member of ``family`` in ``members`` (its members when the DAG was parsed:
    the drivers' outlets are theirs) and returns those whose job must run, dealt into at most
    ``max_drivers`` groups (a list of lists of names, in the members' order, dealt round-robin):
    the next task maps one driver over each group. Logs one line per member that has work and
    one line for the rest. A member the look cannot judge has work: its own run decides and, if
    it fails, fails alone. Subclasses say what "work" is (``_reasons``)."""

    ui_color = "#e8f4ea"
    # What the members' job does, for the log lines.
    work = "job"

    def __init__(self, *, family: str, members: list[str], conf_path: str, max_drivers: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.family = family
        self.members = list(members)
        self.conf_path = conf_path
        self.max_drivers = max_drivers

    @classmethod
    def for_family(cls, family, conf_path: str, **kwargs: Any):
        """The look of a tidemark.stream_config.DeclaredFamily: its members as parsed, its driver bound."""
        return cls(
            family=family.rule.name,
            members=list(family.members),
            conf_path=conf_path,
            max_drivers=family.rule.max_drivers,
            **kwargs,
        )

    def execute(self, context: Any) -> list[list[str]]:
        return dealt(self._with_work(), self.max_drivers)

    @abstractmethod
    def _reasons(self, streams: list) -> dict[str, str | None]:
        """Each member's work (one sentence), None for nothing to do, by name."""

    def _with_work(self) -> list[str]:
        from airflow.sdk.exceptions import AirflowFailException

        from tidemark.chaos_freeze import chaos_freeze_setting
        from tidemark.stream_config import StreamConfigError, read_streams_file

        started = time.monotonic()
        try:
            declared = read_streams_file(self.conf_path)
        except StreamConfigError as error:
            raise AirflowFailException(str(error)) from None
        streams = [declared.streams[name] for name in self.members if name in declared.streams]
        gone = [name for name in self.members if name not in declared.streams]
        if gone:
            self.log.info("Family %s: no longer members (excluded since the DAG was parsed): %s", self.family, gone)
        switches = [name for name in _RUN_SWITCHES if os.environ.get(name, "").strip()]
        if chaos_freeze_setting(os.environ):  # the embedded stack's switch file (tidemark.chaos_freeze)
            switches.append("TIDEMARK_CHAOS_FREEZE_FILE")
        if switches:
            self.log.info("Family %s: %s is set: every member runs its %s", self.family, switches[0], self.work)
            return [stream.name for stream in streams]
        if not self._connections_applied(declared.families[self.family].template):
            return [stream.name for stream in streams]
        reasons = self._reasons(streams)
        with_work = [name for name, reason in reasons.items() if reason is not None]
        for name in with_work:
            self.log.info("Stream %s: running the %s: %s", name, self.work, reasons[name])
        self.log.info(
            "Family %s: %d of %d members have work, %d nothing new (no Spark job for them); looked in %.1f s",
            self.family,
            len(with_work),
            len(reasons),
            len(reasons) - len(with_work),
            time.monotonic() - started,
        )
        return with_work

    def _connections_applied(self, template) -> bool:
        """The lake's S3 settings and the family's Kafka security settings in this process's
        environment, as each member's job gets them; False (logged: every member's job runs and
        names the connection) when they cannot be read."""
        from tidemark_airflow.aws_connection import apply_aws_connection
        from tidemark_airflow.kafka_connection import apply_kafka_connection

        try:
            apply_aws_connection()
            apply_kafka_connection(template.source.kafka_conn_id, template.source.bootstrap_servers)
        except Exception as error:  # each member's submit names the connection and fails alone
            self.log.info(
                "Family %s: a connection could not be read (%s): every member runs its job", self.family, error
            )
            return False
        return True


class FamilyPersistLookOperator(FamilyLookOperator):
    """Work: records the ledger lacks, or a partition whose status the clock changes
    (tidemark.nothing_new), for all members with one Kafka client (connectors.family_look), in
    a process stopped at a deadline (connectors.bounded_family_look): a look hung in the Kafka
    client must not hold the family's ticks."""

    work = "job"

    def _reasons(self, streams: list) -> dict[str, str | None]:
        from connectors.bounded_family_look import look_before_persisting_family_bounded

        looks = look_before_persisting_family_bounded(streams)
        return {name: None if look.nothing_new else look.reason for name, look in looks.items()}


class FamilyMaintenanceLookOperator(FamilyLookOperator):
    """Work: a sealed hour or small table to compact, a claim to settle, a file to vacuum
    (connectors.maintenance_look), member by member."""

    work = "maintenance"

    def _reasons(self, streams: list) -> dict[str, str | None]:
        from connectors.maintenance_look import look_before_maintaining

        reasons = {}
        for stream in streams:
            look = look_before_maintaining(stream)
            reasons[stream.name] = None if look.nothing_to_do else look.reason
        return reasons


def dealt(members: list[str], drivers: int) -> list[list[str]]:
    """``members`` dealt round-robin into at most ``drivers`` groups, none empty."""
    count = min(drivers, len(members))
    return [members[index::count] for index in range(count)]
