"""The embedded services by name, and the order they start and stop in.

The ``tidemark`` CLI (up, down, services, demo) starts and stops them through here: Kafka first,
the loopback S3 and the loopback Kinesis next, then the schema registry and the alarm inbox,
Airflow last (its tasks talk to all of them), and the reverse on the way down. The schema registry starts only when named
(``tidemark up registry``): the shipped streams are JSON, and it costs a JVM. Each function
yields a service's one-line message as soon as that service is done (starting Airflow takes a
minute: the Kafka line should not wait for it); an expected failure raises ``StackError``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

SERVICES = ("kafka", "s3", "kinesis", "registry", "inbox", "airflow")
# Started (and shown by `tidemark services`) only when named; stopped with the rest.
ON_DEMAND = frozenset({"registry"})
DEFAULT_SERVICES = tuple(name for name in SERVICES if name not in ON_DEMAND)


def service(name: str):
    """The embedded service ``name`` (one of SERVICES), configured from the environment."""
    if name == "kafka":
        from stack.kafka_broker import KafkaBroker

        return KafkaBroker.from_environment()
    if name == "s3":
        from stack.loopback_s3 import LoopbackS3

        return LoopbackS3.from_environment()
    if name == "kinesis":
        from stack.loopback_kinesis import LoopbackKinesis

        return LoopbackKinesis.from_environment()
    if name == "registry":
        from stack.schema_registry import SchemaRegistry

        return SchemaRegistry.from_environment()
    if name == "inbox":
        from stack.alarm_inbox import AlarmInbox

        return AlarmInbox.from_environment()
    if name == "airflow":
        from stack.airflow_standalone import AirflowStandalone

        return AirflowStandalone.from_environment()
    raise ValueError(f"no embedded service named {name!r}; the services are {', '.join(SERVICES)}")


def start_services(names: Sequence[str] = ()) -> Iterator[str]:
    """Start ``names`` (none: all but ON_DEMAND) in start order; idempotent."""
    for name in _in_order(names or DEFAULT_SERVICES):
        yield service(name).start()


def stop_services(names: Sequence[str] = ()) -> Iterator[str]:
    """Stop ``names`` (none: all) in reverse start order; idempotent."""
    for name in reversed(_in_order(names)):
        yield service(name).stop()


def _in_order(names: Sequence[str]) -> list[str]:
    return [name for name in SERVICES if not names or name in names]
