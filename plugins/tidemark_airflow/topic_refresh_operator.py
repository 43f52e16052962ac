"""Refresh one stream family's topic listing (connectors.topic_refresh): no Spark, one metadata
request to the family's brokers."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperator


class TopicRefreshOperator(BaseOperator):
    """Lists the topics of ``family``'s brokers, secured by its source's ``kafka_conn_id`` (an
    Airflow connection), writes the family's listing and returns the ListingRefreshResult's JSON;
    logs its one-line summary. Fails, the listing left as it was, when the brokers do not answer
    or refuse."""

    ui_color = "#e8f4ea"

    def __init__(self, *, family: str, conf_path: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.family = family
        self.conf_path = conf_path

    def execute(self, context: Any) -> Any:
        from connectors.topic_refresh import refresh_family
        from tidemark.stream_config import read_streams_file
        from tidemark_airflow.kafka_connection import apply_kafka_connection

        source = read_streams_file(self.conf_path).families[self.family].template.source
        apply_kafka_connection(source.kafka_conn_id, source.bootstrap_servers)
        result = refresh_family(self.conf_path, self.family)
        self.log.info("Topics of %s", result.summary())
        return result.to_json()
