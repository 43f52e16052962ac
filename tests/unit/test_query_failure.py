"""A failure inside Spark's Python code told from the error Spark raises on the driver (the
exception's type is lost on the way): a refused read in one line and exit 2, a registry outage in
one line and exit 1, every other error raised as it was."""

from __future__ import annotations

import pytest

from spark_jobs.query_failure import exit_for_failure, registry_outage
from tidemark.writer_schemas import RegistryUnavailableError

# The tail of what Spark raises on the driver when a Python worker failed (abridged).
SPARK_ERROR = """[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided function.
  File "/work/tidemark/record_decoder.py", line 96, in decode
    return self._decode(value, read_time_ms)
tidemark.writer_schemas.RegistryUnavailableError: the schema registry at http://r:8081 did not answer (Connection refused) for schema 3, for 2 s: the batch fails and is retried, nothing is quarantined
"""


def test_the_workers_line_is_found_in_sparks_error_and_said_in_one_line(capsys):
    error = RuntimeError(SPARK_ERROR)
    assert registry_outage(error).startswith("the schema registry at http://r:8081 did not answer")
    assert registry_outage(RegistryUnavailableError("down")) == "down"
    assert exit_for_failure("persist", "telemetry", error) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("persist: stream 'telemetry': the schema registry at http://r:8081 did not answer")


def test_any_other_error_is_raised_as_it_was():
    error = RuntimeError("Task failed: java.lang.OutOfMemoryError")
    assert registry_outage(error) is None
    with pytest.raises(RuntimeError, match="OutOfMemoryError"):
        exit_for_failure("persist", "telemetry", error)


def test_a_read_the_brokers_refused_inside_the_source_is_one_line_and_exit_2(capsys):
    error = RuntimeError(
        "[STREAM_FAILED] Query [id = 2017] terminated with exception: Failed when Python streaming data source "
        "perform initialOffset: Traceback (most recent call last):\n"
        '  File "/work/connectors/kafka_log.py", line 560, in _open_messages\n'
        "connectors.kafka_clients.KafkaRefusedError: Kafka at b:9093 refused SASL_SSL (connection 'prod') "
        "reading topic 'orders.eu': Broker: Topic authorization failed\n"
        "\tat org.apache.spark.sql.errors.QueryExecutionErrors$.pythonStreamingDataSourceRuntimeError\n"
    )
    assert exit_for_failure("persist", "orders_eu", error) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        "persist: stream 'orders_eu': Kafka at b:9093 refused SASL_SSL (connection 'prod') reading topic "
        "'orders.eu': Broker: Topic authorization failed"
    )
