"""Both adapters speak the whole of tidemark.partitioned_log.PartitionedLog, with its parameter
names, and the one factory picks each from its connection: a method added to the protocol and
forgotten in an adapter fails here, not in a job on the other kind of log."""

from __future__ import annotations

import inspect

import pytest

from connectors.kafka_log import KafkaLog
from connectors.kinesis_log import KinesisLog
from connectors.partitioned_logs import open_log
from tidemark.aligned_slices import BatchedLogTimeIndex
from tidemark.log_connection import KafkaConnection, KinesisConnection
from tidemark.partitioned_log import PartitionedLog


def _protocol_methods() -> dict[str, inspect.Signature]:
    methods = {}
    for protocol in (BatchedLogTimeIndex, PartitionedLog):
        for name, member in vars(protocol).items():
            if callable(member) and not name.startswith("_"):
                methods[name] = inspect.signature(member)
    return methods


@pytest.mark.parametrize("adapter", [KafkaLog, KinesisLog])
def test_each_adapter_has_every_method_of_the_protocol_with_its_parameters(adapter):
    methods = _protocol_methods()
    assert {"bounds_now", "look_before_run", "unread_now", "plan_recovery", "backfill_indexes", "read_ranges"} <= set(
        methods
    )
    for name, wanted in methods.items():
        assert hasattr(adapter, name), f"{adapter.__name__} lacks {name}"
        have = inspect.signature(getattr(adapter, name))
        assert list(have.parameters)[: len(wanted.parameters)] == list(wanted.parameters), (
            f"{adapter.__name__}.{name}{have} does not take the protocol's {wanted}"
        )


def test_the_factory_opens_the_adapter_of_each_connection_and_refuses_an_unknown_one():
    kafka = open_log(KafkaConnection("127.0.0.1:9", "rides"), timeout_s=1.0)
    kinesis = open_log(KinesisConnection("rides", "eu-west-1", "http://127.0.0.1:9"), role="task")
    try:
        assert isinstance(kafka, KafkaLog) and kafka.timeout_s == 1.0 and kafka.connection.topic == "rides"
        assert isinstance(kinesis, KinesisLog) and kinesis.stream_reached() == (
            "rides",
            "eu-west-1",
            "http://127.0.0.1:9",
        )
    finally:
        kafka.close()
        kinesis.close()
    with pytest.raises(TypeError, match="no adapter reads a str"):
        open_log("kafka")
