"""Every topic of a Kafka cluster and its partition count: what a family's refresh lists
(tidemark.topic_listing). One metadata request of the admin client, asked in short slices so that
a refused connection is said at once (connectors.kafka_clients.Refusals)."""

from __future__ import annotations

import time

from connectors.kafka_clients import KafkaUnavailableError, Refusals, client_settings


def cluster_topics(access, timeout_s: float = 30.0) -> dict[str, int]:
    """Topic name -> partition count of every topic the brokers of ``access``
    (tidemark.kafka_access.KafkaAccess) list to this client; a topic the brokers report with an
    error (one being deleted) is left out. Raises KafkaUnavailableError when the brokers do not
    answer within ``timeout_s``, KafkaRefusedError when they refuse the connection."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    refusals = Refusals(access.bootstrap_servers, access.described())
    admin = AdminClient(client_settings(access, {}, refusals))
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            metadata = admin.list_topics(timeout=min(1.0, timeout_s))
            refusals.answered()
            break
        except KafkaException as error:
            admin.poll(0)
            refusals.check()
            if time.monotonic() >= deadline:
                raise KafkaUnavailableError(f"Kafka at {access.bootstrap_servers} did not answer: {error}") from None
    return {
        name: len(topic.partitions)
        for name, topic in metadata.topics.items()
        if topic.error is None and topic.partitions
    }
