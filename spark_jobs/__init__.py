"""Spark adapters: the Kafka streaming source, the Delta writers and the job entry points."""
