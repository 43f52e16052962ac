"""Clients of the outside systems that more than one adapter uses: the Kafka log (confluent_kafka)
and the Spark session with Delta. No Airflow; nothing from spark_jobs, plugins or expectations.

The Spark jobs (spark_jobs/), the quality checks (expectations/) and the Airflow tasks (plugins/)
all read the same log and the same lake; what they share lives here, one layer below them.
"""
