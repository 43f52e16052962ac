"""tidemark's domain core: stream configuration, record decoding and event-time rules.

Pure Python: nothing in this package imports Spark, Airflow or a Kafka client, so every rule is
unit-tested with plain values and injected clocks.
"""
