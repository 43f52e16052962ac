"""The look before a stream family's persist tick: every member's ledger against its topic's
bounds (connectors.persist_look), with one Kafka consumer and one admin client per cluster for
all the members' topics (connectors.kafka_log.KafkaLog.sibling) instead of a pair per topic.

A member whose look cannot be judged (its ledger unreadable, its topic deleted, the brokers
refusing) is answered "run the job", as a single stream's look is: its own run then fails and
alarms, and the other members' answers are unaffected.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from tidemark.nothing_new import PersistLook
from tidemark.stream_config import StreamConfig


def look_before_persisting_family(
    streams: Sequence[StreamConfig], now_ms: int | None = None, log_timeout_s: float = 10.0
) -> dict[str, PersistLook]:
    """Each stream's PersistLook (tidemark.nothing_new), by name, in the order given."""
    from connectors.kafka_log import KafkaLog
    from connectors.persist_look import look_before_persist

    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    clusters: dict[tuple[str, str | None], KafkaLog] = {}

    def shared_log(stream: StreamConfig, timeout_s: float):
        connection = stream.source.connection()
        if stream.source.kind != "kafka":  # a family is Kafka's; any other stream opens its own
            from connectors.partitioned_logs import open_log

            return open_log(connection, timeout_s=timeout_s)
        key = (connection.bootstrap_servers, connection.kafka_conn_id)
        if key not in clusters:
            clusters[key] = KafkaLog.of(connection, timeout_s)
        return clusters[key].sibling(connection)

    try:
        return {stream.name: look_before_persist(stream, now_ms, log_timeout_s, shared_log) for stream in streams}
    finally:
        for log in clusters.values():
            log.close()
