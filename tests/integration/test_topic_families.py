"""A stream family against a real broker: its refresh lists the cluster's topics (over SASL_SSL,
secured by the family's connection), new topics become members, a deleted one stays a member
marked missing, and the streams file reads the members from the listing without asking a broker."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from confluent_kafka.admin import AdminClient

from connectors.kafka_clients import KafkaRefusedError
from connectors.topic_refresh import refresh_family
from tidemark.kafka_access import settings_variable
from tidemark.stream_config import load_streams, read_streams_file
from tidemark.topic_listing import read_listing

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
CONN_ID = "family_kafka"


def _streams_file(tmp_path: Path, bootstrap: str) -> Path:
    shape = copy.deepcopy(yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())["streams"]["telemetry"])
    del shape["source"]["topic"], shape["source"]["partitions"], shape["offline_devices"]
    shape["source"].update(bootstrap_servers=bootstrap, kafka_conn_id=CONN_ID, starting_offsets="latest")
    shape["lake"] = {"root": str(tmp_path / "lake"), "checkpoint_root": str(tmp_path / "checkpoints")}
    document = {
        "listings": "family-listings",
        "families": {"shops": {"match": r"shops\..+", "exclude": [r"shops\.test\..*"], **shape}},
        "streams": {},
    }
    path = tmp_path / "streams.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def test_a_refresh_lists_new_and_deleted_topics_and_the_file_reads_them_without_a_broker(kafka_broker, tmp_path):
    environ = {settings_variable(CONN_ID): json.dumps(kafka_broker.sasl_settings())}
    for topic, partitions in (("shops.eu", 2), ("shops.us", 1), ("shops.test.1", 1), ("shopsx", 1)):
        kafka_broker.create_topic(topic, partitions)
    path = _streams_file(tmp_path, kafka_broker.sasl_bootstrap)
    assert read_streams_file(path, environ).families["shops"].members == (), "no listing yet: no members"

    first = refresh_family(path, "shops", environ=environ)
    assert first.members == ("shops_eu", "shops_us") and set(first.new) == {"shops_eu", "shops_us"}
    streams = load_streams(path, environ)
    assert sorted(streams) == ["shops_eu", "shops_us"]
    assert streams["shops_eu"].source.topic == "shops.eu" and streams["shops_eu"].source.partitions == 2
    assert streams["shops_us"].table_path("ledger") == f"{tmp_path}/lake/shops_us/ledger"
    assert streams["shops_us"].source.starting_offsets == "latest"
    assert (tmp_path / "family-listings" / "shops.json").exists()

    kafka_broker.create_topic("shops.asia", 3)
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})
    for future in admin.delete_topics(["shops.us"], operation_timeout=30).values():
        future.result()
    second = refresh_family(path, "shops", environ=environ)
    assert second.new == ("shops_asia",)
    assert second.missing == ("shops_us",), "a deleted topic stays, marked missing"
    listed = {topic.name: topic for topic in read_listing(tmp_path / "family-listings" / "shops.json").topics}
    assert listed["shops.us"].missing_since_ms == second.refreshed_at_ms
    assert listed["shops.eu"].first_seen_ms == first.refreshed_at_ms
    assert sorted(load_streams(path, environ)) == ["shops_asia", "shops_eu", "shops_us"]
    assert "shops_asia" in second.summary() and "topic gone" in second.summary()


def test_a_refresh_the_brokers_refuse_says_so_and_leaves_the_listing(kafka_broker, tmp_path):
    kafka_broker.create_topic("shops.eu", 2)
    path = _streams_file(tmp_path, kafka_broker.sasl_bootstrap)
    good = {settings_variable(CONN_ID): json.dumps(kafka_broker.sasl_settings())}
    refresh_family(path, "shops", environ=good)
    before = (tmp_path / "family-listings" / "shops.json").read_bytes()

    wrong = {settings_variable(CONN_ID): json.dumps({**kafka_broker.sasl_settings(), "sasl.password": "wrong-S3cret"})}
    with pytest.raises(KafkaRefusedError, match="refused") as refused:
        refresh_family(path, "shops", environ=wrong, timeout_s=20)
    assert "wrong-S3cret" not in str(refused.value)
    assert (tmp_path / "family-listings" / "shops.json").read_bytes() == before
