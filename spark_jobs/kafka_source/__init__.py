"""tidemark's Kafka streaming source (PySpark Python Data Source ``tidemark_kafka``).

``options``: what a query asks of the source, one typed value; ``rows``: the Arrow rows it
yields; ``reader``: the DataSource a job registers (``KafkaLogSource``) and the stream reader
that plans and reads. Nothing is imported here, so the options import without Spark.
"""
