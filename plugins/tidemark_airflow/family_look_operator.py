"""The first task of a family's persist tick: which members have anything to do, decided without
Spark for all of them at once (connectors.family_look)."""

from __future__ import annotations

import os
import time
from typing import Any

from airflow.sdk import BaseOperator

# Switches that make a run do something a look at the log cannot see (as for one stream's look).
_RUN_SWITCHES = ("TIDEMARK_CHAOS_FREEZE", "TIDEMARK_CHAOS_THROTTLE", "TIDEMARK_CRASH_AT")


class FamilyPersistLookOperator(BaseOperator):
    """Looks at every member of ``family`` in ``members`` (its members when the DAG was parsed:
    the persist task's outlets are theirs) and returns those whose persist job must run, dealt
    into at most ``max_drivers`` groups (a list of lists of names, in the members' order, dealt
    round-robin): the persist task maps one driver over each group. Logs one line per member
    that has work and one line for the rest. A member the look cannot judge has work: its own
    run decides and, if it fails, fails alone."""

    ui_color = "#e8f4ea"

    def __init__(self, *, family: str, members: list[str], conf_path: str, max_drivers: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.family = family
        self.members = list(members)
        self.conf_path = conf_path
        self.max_drivers = max_drivers

    def execute(self, context: Any) -> list[list[str]]:
        return dealt(self._with_work(), self.max_drivers)

    def _with_work(self) -> list[str]:
        from airflow.sdk.exceptions import AirflowFailException

        from connectors.family_look import look_before_persisting_family
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
        if switches:
            self.log.info("Family %s: %s is set: every member runs its job", self.family, switches[0])
            return [stream.name for stream in streams]
        if not self._connections_applied(declared.families[self.family].template):
            return [stream.name for stream in streams]
        looks = look_before_persisting_family(streams)
        with_work = [name for name, look in looks.items() if not look.nothing_new]
        for name in with_work:
            self.log.info("Stream %s: running the job: %s", name, looks[name].reason)
        self.log.info(
            "Family %s: %d of %d members have work, %d nothing new (no Spark job for them); looked in %.1f s",
            self.family,
            len(with_work),
            len(looks),
            len(looks) - len(with_work),
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


def dealt(members: list[str], drivers: int) -> list[list[str]]:
    """``members`` dealt round-robin into at most ``drivers`` groups, none empty."""
    count = min(drivers, len(members))
    return [members[index::count] for index in range(count)]
