"""Stream families (tidemark.stream_families): one stream per listed topic matching a pattern,
its name given once by the listing (tidemark.topic_listing), checked like a declared stream, its
errors naming the family key they came from."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import msgspec
import pytest
import yaml

from tidemark.stream_config import StreamConfigError, load_streams, read_streams_file
from tidemark.stream_families import stream_name_for, template_name
from tidemark.topic_listing import TopicListing, read_listing, refreshed, write_listing

REPO = Path(__file__).resolve().parents[2]
ENV = {"TIDEMARK_LAKE_ROOT": "/lake", "TIDEMARK_CHECKPOINT_ROOT": "/checkpoints", "KAFKA": "broker:9092"}
TELEMETRY = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())["streams"]["telemetry"]
MINUTE = 60_000


def _shape() -> dict:
    """The shipped telemetry stream's keys without its topic, partitions and detector."""
    shape = copy.deepcopy(TELEMETRY)
    del shape["source"]["topic"], shape["source"]["partitions"], shape["offline_devices"]
    shape["source"]["bootstrap_servers"] = "${KAFKA}"
    return shape


def _file(tmp_path, families: dict, streams: dict | None = None, **top) -> Path:
    path = tmp_path / "streams.yaml"
    document = {"defaults": _shape(), **top, "families": families}
    if streams is not None:
        document["streams"] = streams
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def _listed(tmp_path, family: str, topics: dict[str, int], previous: TopicListing | None = None, now_ms: int = 0):
    listing = refreshed(previous, family, "broker:9092", topics, now_ms, stream_name_for)
    write_listing(tmp_path / "listings" / f"{family}.json", listing)
    return listing


def test_members_are_the_listed_topics_that_match_and_are_not_excluded(tmp_path):
    path = _file(tmp_path, {"orders": {"match": r"orders\..+", "exclude": [r"orders\.test.*"]}})
    _listed(
        tmp_path,
        "orders",
        {"orders.eu": 12, "orders.us": 24, "orders.test1": 1, "payments": 3, "__consumer_offsets": 50},
    )

    declared = read_streams_file(path, ENV)

    assert sorted(declared.streams) == ["orders_eu", "orders_us"]
    assert declared.streams["orders_us"].source.topic == "orders.us"
    assert declared.streams["orders_us"].source.partitions == 24
    assert declared.streams["orders_eu"].table_path("events") == "/lake/orders_eu/events"
    family = declared.families["orders"]
    assert family.members == ("orders_eu", "orders_us")
    assert family.template.source.bootstrap_servers == "broker:9092"
    assert family.listing_path == tmp_path / "listings" / "orders.json"


def test_a_member_is_the_stream_written_out_with_its_topic(tmp_path):
    path = _file(tmp_path, {"orders": {"match": "orders.*", "persist": {"max_records_per_batch": 50000}}})
    _listed(tmp_path, "orders", {"orders": 12})
    written_out = copy.deepcopy(TELEMETRY)
    written_out["source"].update(topic="orders", partitions=12, bootstrap_servers="broker:9092")
    written_out["persist"]["max_records_per_batch"] = 50000
    del written_out["offline_devices"]
    by_hand = tmp_path / "by_hand.yaml"
    by_hand.write_text(yaml.safe_dump({"streams": {"orders": written_out}}, sort_keys=False))

    member = load_streams(path, ENV)["orders"]
    assert member.family == "orders"
    assert member == msgspec.structs.replace(load_streams(by_hand, ENV)["orders"], family="orders")


def test_without_a_listing_a_family_has_no_members_and_its_keys_are_still_checked(tmp_path):
    path = _file(
        tmp_path, {"orders": {"match": "orders.*"}}, streams={"rides": {"source": {"topic": "rides", "partitions": 2}}}
    )
    declared = read_streams_file(path, ENV)
    assert list(declared.streams) == ["rides"]
    assert declared.families["orders"].members == ()

    bad = _file(tmp_path, {"orders": {"match": "orders.*", "persist": {"schedule": "every minute"}}})
    with pytest.raises(StreamConfigError) as error:
        read_streams_file(bad, ENV)
    assert re.search(
        rf"streams\.{template_name('orders')}\.persist\.schedule \(from families\.orders\.persist\.schedule\): ",
        str(error.value),
    )


def test_an_error_in_a_member_names_the_family_key_or_the_default_it_came_from(tmp_path):
    path = _file(tmp_path, {"orders": {"match": "orders.*", "quality": {"stall_window": 1}}})
    _listed(tmp_path, "orders", {"orders.eu": 1})
    with pytest.raises(
        StreamConfigError, match=r"quality\.stall_window \(from families\.orders\.quality\.stall_window\)"
    ):
        load_streams(path, ENV)

    shape = _shape()
    shape["retention"] = "5m"  # shorter than allowed_lateness
    path.write_text(yaml.safe_dump({"defaults": shape, "families": {"orders": {"match": "orders.*"}}}))
    with pytest.raises(StreamConfigError, match=r"event_time\.allowed_lateness .*not shorter than the log retention"):
        load_streams(path, ENV)


@pytest.mark.parametrize(
    ("family", "key", "reason"),
    [
        ({"match": "orders.*", "source": {"topic": "x"}}, "families.orders.source.topic", "from the cluster's listing"),
        ({"match": "orders.*", "source": {"partitions": 3}}, "families.orders.source.partitions", "listing"),
        ({"match": "orders(["}, "families.orders.match", "not a regular expression"),
        ({"match": "orders.*", "exclude": ["a", "("]}, r"families.orders.exclude.\[1\]", "not a regular expression"),
        ({}, "families.orders.match", "missing required key"),
        ({"match": "o.*", "refresh": "sometimes"}, "families.orders.refresh", "sometimes"),
        ({"match": "o.*", "source": {"kind": "kinesis", "stream_name": "x"}}, "families.orders.source.kind", "Kafka"),
    ],
)
def test_a_family_key_that_is_wrong_is_named(tmp_path, family, key, reason):
    with pytest.raises(StreamConfigError, match=rf"streams\.yaml: {key}.*{reason}"):
        read_streams_file(_file(tmp_path, {"orders": family}), ENV)


def test_a_declared_stream_that_takes_a_members_name_is_an_error_naming_both(tmp_path):
    path = _file(
        tmp_path, {"orders": {"match": "orders.*"}}, streams={"orders_eu": {"source": {"topic": "x", "partitions": 1}}}
    )
    _listed(tmp_path, "orders", {"orders.eu": 1})
    with pytest.raises(
        StreamConfigError, match=r"streams\.orders_eu: .*family 'orders''s member for topic 'orders\.eu'"
    ):
        load_streams(path, ENV)


def test_stream_names_are_given_once_and_never_twice():
    assert stream_name_for("orders.eu", set()) == "orders_eu"
    assert stream_name_for("Orders-EU", set()) == "orders_eu"
    assert stream_name_for("1st.topic", set()) == "t_1st_topic"
    taken = stream_name_for("orders_eu", {"orders_eu"})
    assert re.fullmatch(r"orders_eu_[0-9a-f]{8}", taken)
    long = stream_name_for("x" * 200, set())
    assert len(long) == 63 and re.fullmatch(r"x{54}_[0-9a-f]{8}", long)


def test_a_refresh_keeps_names_and_first_sight_and_marks_a_topic_gone_missing(tmp_path):
    first = refreshed(None, "orders", "b:1", {"orders.eu": 4, "orders_eu": 2}, 10 * MINUTE, stream_name_for)
    names = {topic.name: topic.stream for topic in first.topics}
    assert names["orders.eu"] == "orders_eu" and names["orders_eu"].startswith("orders_eu_")

    # orders.eu deleted, a partition added to orders_eu, a new topic created.
    second = refreshed(first, "orders", "b:1", {"orders_eu": 3, "orders.us": 1}, 20 * MINUTE, stream_name_for)
    by_name = {topic.name: topic for topic in second.topics}
    assert by_name["orders.eu"].missing_since_ms == 20 * MINUTE and by_name["orders.eu"].partitions == 4
    assert by_name["orders_eu"].partitions == 3 and by_name["orders_eu"].stream == names["orders_eu"]
    assert by_name["orders.us"].first_seen_ms == 20 * MINUTE
    assert [topic.name for topic in second.present()] == ["orders.us", "orders_eu"]

    third = refreshed(second, "orders", "b:1", {"orders_eu": 3, "orders.us": 1}, 30 * MINUTE, stream_name_for)
    assert {t.name: t for t in third.topics}["orders.eu"].missing_since_ms == 20 * MINUTE
    back = refreshed(third, "orders", "b:1", {"orders.eu": 4}, 40 * MINUTE, stream_name_for)
    again = {t.name: t for t in back.topics}["orders.eu"]
    assert again.missing_since_ms is None and again.stream == "orders_eu" and again.first_seen_ms == 10 * MINUTE

    other_cluster = refreshed(back, "orders", "b:2", {"orders.eu": 1}, 50 * MINUTE, stream_name_for)
    assert [t.name for t in other_cluster.topics] == ["orders.eu"]

    path = tmp_path / "orders.json"
    write_listing(path, back)
    assert read_listing(path) == back
    assert read_listing(tmp_path / "none.json") is None


def test_a_deleted_topic_stays_a_member_so_that_its_runs_fail_where_people_look(tmp_path):
    path = _file(tmp_path, {"orders": {"match": "orders.*"}})
    first = _listed(tmp_path, "orders", {"orders.eu": 1, "orders.us": 1})
    _listed(tmp_path, "orders", {"orders.us": 1}, previous=first, now_ms=MINUTE)
    assert sorted(load_streams(path, ENV)) == ["orders_eu", "orders_us"]


def test_a_listing_that_cannot_be_read_names_its_file(tmp_path):
    path = _file(tmp_path, {"orders": {"match": "orders.*"}}, listings="${TIDEMARK_LAKE_ROOT_DIR:-elsewhere}")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "orders.json").write_text("{not json")
    with pytest.raises(StreamConfigError, match=r"families\.orders: .*elsewhere/orders\.json: not a topic listing"):
        load_streams(path, ENV)


def test_the_guides_example_loads_as_it_says(tmp_path):
    guide = (REPO / "docs" / "configuration.md").read_text()
    example = re.search(r"## Families: one stream per topic.*?```yaml\n(.*?)```", guide, re.DOTALL).group(1)
    path = tmp_path / "streams.yaml"
    path.write_text(example)
    environ = {**ENV, "TIDEMARK_KAFKA_BOOTSTRAP": "127.0.0.1:9092", "TIDEMARK_HOME": str(tmp_path / "home")}
    listing = refreshed(
        None, "orders", "127.0.0.1:9092", {"orders.eu": 12, "orders.test.1": 1, "rides": 2}, 0, stream_name_for
    )
    write_listing(tmp_path / "home" / "listings" / "orders.json", listing)

    streams = load_streams(path, environ)

    assert [(s.name, s.source.topic, s.source.partitions, s.retention_ms) for s in streams.values()] == [
        ("orders_eu", "orders.eu", 12, 7 * 24 * 3_600_000)
    ]


def test_a_stream_may_not_say_it_is_a_member_and_dag_ids_follow_membership(tmp_path):
    from tidemark.dag_ids import persist_dag_id, sweep_dag_id, triggered_dag_id

    path = _file(
        tmp_path,
        {"orders": {"match": "orders.*"}},
        streams={"x": {"source": {"topic": "x", "partitions": 1}, "family": "orders"}},
    )
    with pytest.raises(StreamConfigError, match=r"streams\.x\.family: unknown key"):
        load_streams(path, ENV)

    path = _file(
        tmp_path, {"orders": {"match": "orders.*"}}, streams={"x": {"source": {"topic": "x", "partitions": 1}}}
    )
    _listed(tmp_path, "orders", {"orders.eu": 1})
    streams = load_streams(path, ENV)
    assert persist_dag_id(streams["orders_eu"]) == "tidemark_persist__family__orders"
    assert persist_dag_id(streams["x"]) == "tidemark_persist__x"
    assert triggered_dag_id("backfill", streams["orders_eu"]) == "tidemark_backfill__family__orders"
    assert triggered_dag_id("backfill", streams["x"]) == "tidemark_backfill__x"
    assert (sweep_dag_id(streams["orders_eu"]), sweep_dag_id(streams["x"])) == (
        "tidemark_sweep__family__orders",
        "tidemark_sweep__x",
    )
    continuous = _file(tmp_path, {"orders": {"match": "orders.*", "persist": {"mode": "continuous"}}})
    assert persist_dag_id(load_streams(continuous, ENV)["orders_eu"]) == "tidemark_persist__orders_eu"
