"""tidemark's Kinesis streaming source (PySpark Python Data Source on boto3)."""
