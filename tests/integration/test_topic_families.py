"""A stream family against a real broker: its refresh lists the cluster's topics (over SASL_SSL,
secured by the family's connection), new topics become members, a deleted one stays a member
marked missing, and the streams file reads the members from the listing without asking a broker.
A member whose topic the ACLs refuse to the family's user fails alone in its driver."""

from __future__ import annotations

import copy
import json
import os
import time
from pathlib import Path
from unittest import mock

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


def _streams_file(tmp_path: Path, bootstrap: str, family: str = "shops", starting_offsets: str = "latest") -> Path:
    """A family over ``<family>.*`` (``<family>.test.*`` excluded) on the connection ``CONN_ID``."""
    shape = copy.deepcopy(yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())["streams"]["telemetry"])
    del shape["source"]["topic"], shape["source"]["partitions"], shape["offline_devices"]
    shape["source"].update(bootstrap_servers=bootstrap, kafka_conn_id=CONN_ID, starting_offsets=starting_offsets)
    shape["lake"] = {"root": str(tmp_path / "lake"), "checkpoint_root": str(tmp_path / "checkpoints")}
    document = {
        "listings": "family-listings",
        "families": {family: {"match": rf"{family}\..+", "exclude": [rf"{family}\.test\..*"], **shape}},
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


def test_a_member_whose_topic_the_acls_refuse_fails_alone_and_the_member_after_it_persists(
    kafka_broker, spark, tmp_path
):
    """Issue 41's "failing alone" for ACLs. The family's user may describe both topics (the refresh
    lists both) but not read ``acl.locked``. In one driver, the locked member runs first and fails
    with its own reason; the member after it persists every record once, so no client it meets
    (the driver's, the reused Python workers') carries the refusal over. The look afterwards
    still sends the locked member to its job (its next tick fails and alarms again) and finds
    nothing new for the other."""
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    from connectors.family_look import look_before_persisting_family
    from harness.persist_job import produce, run_in_process, telemetry_value
    from spark_jobs.persist.family_job import main
    from tidemark.family_driver_result import FamilyDriverResult

    now_ms = int(time.time() * 1000)
    times = [now_ms - 3_600_000 + i * 30_000 for i in range(100)]
    for topic in ("acl.locked", "acl.open"):
        kafka_broker.create_topic(topic, 2)
        produce(
            kafka_broker.bootstrap,
            topic,
            [(i % 2, telemetry_value(f"{topic}-{i % 3}", t), t) for i, t in enumerate(times)],
        )
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})
    # Once a topic has an ACL, no one else is allowed by default: DESCRIBE (listing it, its
    # offsets) is allowed explicitly, READ denied.
    acls = [
        AclBinding(
            ResourceType.TOPIC,
            "acl.locked",
            ResourcePatternType.LITERAL,
            f"User:{kafka_broker.sasl_user}",
            "*",
            operation,
            permission,
        )
        for operation, permission in (
            (AclOperation.DESCRIBE, AclPermissionType.ALLOW),
            (AclOperation.READ, AclPermissionType.DENY),
        )
    ]
    for future in admin.create_acls(acls).values():
        future.result()
    path = _streams_file(tmp_path, kafka_broker.sasl_bootstrap, family="acl", starting_offsets="earliest")
    environ = {settings_variable(CONN_ID): json.dumps(kafka_broker.sasl_settings())}
    assert refresh_family(path, "acl", environ=environ).members == ("acl_locked", "acl_open")

    results = tmp_path / "driver"
    results.mkdir()
    argv = ["--conf", str(path), "--stream", "acl_locked", "--stream", "acl_open", "--result-dir", str(results)]
    assert run_in_process(main, argv, tmp_path / "driver.log", environ) == 0
    outcomes = {m.stream: m for m in FamilyDriverResult.decode((results / "result.json").read_bytes()).members}
    driver_log = (tmp_path / "driver.log").read_text()
    assert outcomes["acl_open"].exit_code == 0, driver_log[-5000:]
    # Its reason is the refusal inside the failed query, in one line (the verdict and its alarm
    # say it), and its exit status a refusal's: a retry cannot help.
    locked = outcomes["acl_locked"]
    assert locked.exit_code == 2 and locked.error.startswith("persist: stream 'acl_locked': Kafka at "), locked
    assert "reading topic 'acl.locked': " in locked.error and "Topic authorization failed" in locked.error
    assert "Traceback" not in driver_log and kafka_broker.sasl_password() not in driver_log

    def offsets(member: str) -> list[tuple[int, int]]:
        rows = spark.read.format("delta").load(str(tmp_path / "lake" / member / "events"))
        return sorted((r.source_partition, r.source_offset) for r in rows.collect())

    assert offsets("acl_open") == sorted((p, o) for p in (0, 1) for o in range(50)), "every record once"
    with mock.patch.dict(os.environ, environ):
        looks = look_before_persisting_family(list(load_streams(path, environ).values()))
    assert looks["acl_open"].nothing_new, looks["acl_open"]
    assert not looks["acl_locked"].nothing_new, "the locked member's next tick runs its job: it fails and alarms again"
