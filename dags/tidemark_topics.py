"""Topic listing DAGs: one per stream family in conf/streams.yaml, named tidemark_topics__<family>.

Each run asks the family's brokers which topics they hold and writes the family's listing
(tidemark.topic_listing), which every DAG file reads at parse time: a new matching topic gets its
DAGs at the next parse. Wiring only; parsing reads the configuration file and the listings.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pendulum
from airflow.sdk import dag

from tidemark.stream_config import DeclaredFamily, read_streams_file
from tidemark_airflow.alert_occasions import TopicsRefreshFailed
from tidemark_airflow.alerts import alarm_callbacks
from tidemark_airflow.topic_refresh_operator import TopicRefreshOperator

CONF_PATH = os.environ.get("TIDEMARK_CONF", str(Path(__file__).resolve().parents[1] / "conf" / "streams.yaml"))


def topics_dag(family: DeclaredFamily):
    name = family.rule.name

    @dag(
        dag_id=f"tidemark_topics__{name}",
        schedule=family.rule.refresh,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        tags=["tidemark", "topics", name],
        doc_md=f"""
### Topics of family `{name}`
Lists the topics of `{family.template.source.bootstrap_servers}` and writes `{family.listing_path}`.
Members are the topics whose whole name matches `{family.rule.match}`
{f"and none of {', '.join(f'`{p}`' for p in family.rule.exclude)}" if family.rule.exclude else ""}: {len(family.members)} now.
A new topic is a stream from the next DAG parse on, read from its `source.starting_offsets`; a
deleted one stays a stream, its runs failing and alarming, until it is excluded.
""",
    )
    def topics():
        TopicRefreshOperator(
            task_id="refresh",
            family=name,
            conf_path=CONF_PATH,
            retries=2,
            retry_delay=timedelta(seconds=30),
            on_failure_callback=alarm_callbacks(family.template, TopicsRefreshFailed(name)),
        )

    return topics()


for _family in read_streams_file(CONF_PATH).families.values():
    globals()[f"tidemark_topics__{_family.rule.name}"] = topics_dag(_family)
