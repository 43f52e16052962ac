"""`airflow dags test` runs the persist DAG end to end: Airflow submits the job with spark-submit
through the spark_default connection, against the real broker, into Delta; the run after it, with
nothing new in the topic, ends without Spark.

The topic is on the broker's SASL_SSL listener (SCRAM-SHA-512), its settings in an Airflow
connection of the provider's ``kafka`` type: the secured path as a deployment runs it (the
operator reads the connection, spark-submit's driver and its executors read the topic, the
look before the second run asks the log), and the password is in no task log and no file the
runs wrote."""

from __future__ import annotations

import json
import re
import time

import pytest

from harness.airflow_process import dags_test_many
from harness.persist_job import produce, telemetry_value, write_stream_config
from harness.secret_search import SecretSearch
from harness.secured_kafka import scram

pytestmark = pytest.mark.integration


def test_dags_test_persists_the_topic_through_spark_submit(airflow_environment, kafka_broker, spark, tmp_path):
    topic = "dag_persist"
    kafka_broker.create_topic(topic, 4)
    now_ms = int(time.time() * 1000)
    # Event times rising over the last 90 minutes, as a producer writes them.
    times = [now_ms - 5_400_000 + i * 13_500 for i in range(400)]
    good = [(i % 4, telemetry_value(f"scooter-{i % 9}", t), t) for i, t in enumerate(times)]
    bad = [(p, b'{"device_id": "s", "event_time": "not a time"}', now_ms) for p in range(4)]
    secured = scram(kafka_broker)
    produce(secured.bootstrap, topic, good + bad, secured.settings)
    conf = write_stream_config(tmp_path, secured.bootstrap, topic, 4, kafka_conn_id=secured.conn_id)
    environment = {
        **airflow_environment,
        **secured.airflow_environment(),
        "TIDEMARK_CONF": str(conf),
        # The JSON form: a URI like spark://local[2] would make the provider fall back to YARN.
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
    }

    # Twice in one Airflow process: the second run finds nothing new and starts no Spark.
    result, again = dags_test_many(environment, [["tidemark_persist__telemetry"], ["tidemark_persist__telemetry"]])
    output = result.output
    assert result.returncode == 0, output[-5000:]
    assert "spark-submit" in output and "local[2]" in output, "submitted through the Spark provider's connection"
    # The task log is for people: tidemark's own lines, Spark's warnings, not Spark's INFO chatter
    # (before: about 600 lines a batch). The three left are printed before the SparkContext starts.
    assert "batch_persisted" in output
    spark_info = re.findall(r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d INFO ", output)
    assert len(spark_info) <= 5, f"{len(spark_info)} Spark INFO lines in the task log"
    assert "Received command" not in output, "py4j's callback chatter"

    assert again.returncode == 0, again.output[-5000:]
    assert (
        "nothing new, no Spark job started: the log ends equal the ledger's positions on all 4 partitions"
        in again.output
    )
    assert "spark-submit" not in again.output and "batch_persisted" not in again.output
    assert "Kafka security settings from the Airflow connection 'kafka_secured'" in output

    # The password is in neither task log nor any file the runs wrote (Airflow's logs, the lake,
    # the checkpoint).
    search = SecretSearch(secured.secrets(), control=topic)
    search.folders(tmp_path, airflow_environment["AIRFLOW_HOME"]).texts(
        {"task log": output, "second task log": again.output}
    )
    assert search.found == []
    assert search.files_read > 20 and search.controls_found, "the search read what the runs wrote"

    lake = tmp_path / "lake" / "telemetry"
    events = spark.read.format("delta").load(str(lake / "events"))
    quarantine = spark.read.format("delta").load(str(lake / "quarantine"))
    assert events.count() == len(good)
    assert events.select("source_partition", "source_offset").distinct().count() == len(good)
    assert [row.reason for row in quarantine.collect()] == ["unparsable_event_time"] * 4
