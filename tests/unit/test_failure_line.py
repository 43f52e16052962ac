"""The one line that says why something failed: the Python exception inside a failed Spark
query's text, not the query's first line."""

from tidemark.failure_line import failure_line

# A StreamingQueryException's text as PySpark gives it (shortened in the middle; the frame lines,
# the exception line and the JVM's stack lines as Spark lays them out).
STREAM_FAILED = """[STREAM_FAILED] Query [id = 20173853-2896-42e7-9f9f-2a67ce560914, runId = 93070d3f] \
terminated with exception: [PYTHON_STREAMING_DATA_SOURCE_RUNTIME_ERROR] Failed when Python streaming \
data source perform initialOffset: Traceback (most recent call last):
  File "/work/main/spark_jobs/log_source/reader.py", line 170, in initialOffset
    return self._offset(self._registered(start, log.first_positions(ids)))
                                                ^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/work/main/connectors/kafka_log.py", line 560, in _open_messages
    raise refused(error)
connectors.kafka_clients.KafkaRefusedError: Kafka at 127.0.0.1:56931 refused SASL_SSL reading topic 'acl.locked': \
Fetch from broker 1 failed: Broker: Topic authorization failed

\tat org.apache.spark.sql.errors.QueryExecutionErrors$.pythonStreamingDataSourceRuntimeError(QueryExecutionErrors.scala:1881)
\tat org.apache.spark.sql.execution.python.streaming.PythonStreamingSourceRunner.initialOffset(PythonStreamingSourceRunner.scala:130)
"""


def test_a_failed_querys_reason_is_the_python_exception_inside_it():
    assert failure_line("StreamingQueryException", STREAM_FAILED) == (
        "KafkaRefusedError: Kafka at 127.0.0.1:56931 refused SASL_SSL reading topic 'acl.locked': "
        "Fetch from broker 1 failed: Broker: Topic authorization failed"
    )


def test_of_chained_tracebacks_the_last_ones_exception_is_the_reason():
    text = (
        "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\nKeyError: 'x'\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
        'Traceback (most recent call last):\n  File "a.py", line 3, in f\nRuntimeError: the ledger is unreadable\n'
    )
    assert failure_line("Py4JJavaError", text) == "RuntimeError: the ledger is unreadable"


def test_an_error_without_a_traceback_is_its_type_and_first_line_without_colours_and_cut():
    assert failure_line("ValueError", "topic 'b' does not exist\nmore") == "ValueError: topic 'b' does not exist"
    assert (
        failure_line("DeltaError", "\x1b[31mGeneric S3 error\x1b[0m: refused")
        == "DeltaError: Generic S3 error: refused"
    )
    assert failure_line("TimeoutError", "") == "TimeoutError"
    long = failure_line("ValueError", "x" * 500, most=50)
    assert len(long) == 50 and long.endswith("…")
