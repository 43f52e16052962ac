"""A streams file's ``defaults:`` section (tidemark.config_defaults): every stream inherits it
key by key, is checked as if it had written the inherited keys, and a problem in one names the
stream's key path and where it came from."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from tidemark.config_defaults import inherit_defaults
from tidemark.config_values import ConfigRuleError
from tidemark.stream_config import StreamConfigError, load_streams

REPO = Path(__file__).resolve().parents[2]
ENV = {"TIDEMARK_LAKE_ROOT": "/lake", "TIDEMARK_CHECKPOINT_ROOT": "/checkpoints"}
SHIPPED = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())["streams"]


def _load(tmp_path, document: dict):
    path = tmp_path / "streams.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return load_streams(path, ENV)


def _shared(stream: dict) -> dict:
    """The shipped telemetry stream without what differs between topics of one shape."""
    shared = copy.deepcopy(stream)
    del shared["source"]["topic"], shared["source"]["partitions"], shared["offline_devices"]
    return shared


def test_streams_declared_with_defaults_are_the_streams_written_out_in_full(tmp_path):
    telemetry = SHIPPED["telemetry"]
    written_out = {}
    for name, partitions in (("orders", 12), ("payments", 3)):
        stream = copy.deepcopy(telemetry)
        stream["source"].update(topic=name, partitions=partitions)
        del stream["offline_devices"]
        written_out[name] = stream
    written_out["payments"]["persist"]["max_records_per_batch"] = 50_000
    declared = {
        "defaults": _shared(telemetry),
        "streams": {
            "orders": {"source": {"topic": "orders", "partitions": 12}},
            "payments": {"source": {"topic": "payments", "partitions": 3}, "persist": {"max_records_per_batch": 50000}},
        },
    }
    assert _load(tmp_path, declared) == _load(tmp_path, {"streams": written_out})
    assert _load(tmp_path, declared)["payments"].persist.schedule == telemetry["persist"]["schedule"]


def test_a_stream_replaces_values_lists_and_a_source_of_another_kind_whole(tmp_path):
    defaults = _shared(SHIPPED["telemetry"])
    rides = SHIPPED["rides"]
    streams = _load(
        tmp_path,
        {
            "defaults": defaults,
            "streams": {
                "orders": {"source": {"topic": "orders", "partitions": 2}, "retention": "3d"},
                "rides": {"source": rides["source"], "retention": rides["retention"]},
            },
        },
    )
    assert streams["orders"].retention_ms == 3 * 86_400_000
    assert streams["orders"].source.bootstrap_servers == "127.0.0.1:19092"  # the default's, no env set
    # the Kinesis source is its own, none of the Kafka default's keys merged into it
    assert streams["rides"].source.stream == "rides" and streams["rides"].source.shards == 4


def test_named_payload_fields_merge_by_name(tmp_path):
    defaults = _shared(SHIPPED["telemetry"])
    own = {"source": {"topic": "orders", "partitions": 1}}
    own["payload"] = {"fields": {"battery": {"type": "long", "required": False}, "speed": {"type": "double"}}}
    fields = _load(tmp_path, {"defaults": defaults, "streams": {"orders": own}})["orders"].payload.fields
    assert [(f.name, f.type, f.required) for f in fields] == [
        ("device_id", "string", True),
        ("lat", "double", True),
        ("lon", "double", True),
        ("battery", "long", False),
        ("speed", "double", True),  # a field is required unless it says otherwise
    ]


def test_an_empty_key_in_a_stream_does_not_inherit_it_and_takes_tidemarks_own_default(tmp_path):
    defaults = _shared(SHIPPED["telemetry"])
    defaults["quality"]["stall_window"] = 9
    plain = {"source": {"topic": "a", "partitions": 1}}
    own = {"source": {"topic": "b", "partitions": 1}, "quality": {"stall_window": None}}
    streams = _load(tmp_path, {"defaults": defaults, "streams": {"a": plain, "b": own}})
    built_in = _load(tmp_path, {"streams": {"c": {**defaults, "source": {**defaults["source"], **plain["source"]}}}})
    assert streams["a"].quality.stall_window == 9
    assert streams["b"].quality.stall_window == type(built_in["c"].quality)().stall_window != 9
    assert streams["b"].quality.stall_timeout_ms == streams["a"].quality.stall_timeout_ms  # the rest inherited


def test_a_bad_inherited_value_names_the_streams_key_and_the_default_it_came_from(tmp_path):
    defaults = _shared(SHIPPED["telemetry"])
    defaults["persist"]["schedule"] = "61 * * * *"
    with pytest.raises(StreamConfigError) as error:
        _load(tmp_path, {"defaults": defaults, "streams": {"orders": {"source": {"topic": "o", "partitions": 1}}}})
    assert "streams.orders.persist.schedule (from defaults.persist.schedule):" in str(error.value)

    defaults = _shared(SHIPPED["telemetry"])
    defaults["quality"]["stall_window"] = 1
    with pytest.raises(StreamConfigError) as error:
        _load(tmp_path, {"defaults": defaults, "streams": {"orders": {"source": {"topic": "o", "partitions": 1}}}})
    assert "streams.orders.quality.stall_window (from defaults.quality.stall_window): expected" in str(error.value)

    defaults = _shared(SHIPPED["telemetry"])
    defaults["persist"]["colour"] = "blue"
    with pytest.raises(StreamConfigError) as error:
        _load(tmp_path, {"defaults": defaults, "streams": {"orders": {"source": {"topic": "o", "partitions": 1}}}})
    assert "streams.orders.persist.colour (from defaults.persist.colour): unknown key" in str(error.value)


def test_a_streams_own_bad_value_names_only_its_own_key(tmp_path):
    defaults = _shared(SHIPPED["telemetry"])
    own = {"source": {"topic": "o", "partitions": 1}, "persist": {"schedule": "61 * * * *"}}
    with pytest.raises(StreamConfigError) as error:
        _load(tmp_path, {"defaults": defaults, "streams": {"orders": own}})
    message = str(error.value)
    assert "streams.orders.persist.schedule:" in message and "from defaults" not in message


def test_a_missing_key_that_defaults_do_not_fill_names_the_stream(tmp_path):
    defaults = _shared(SHIPPED["telemetry"])
    with pytest.raises(StreamConfigError, match=r"streams\.orders\.source\.topic: missing required key"):
        _load(tmp_path, {"defaults": defaults, "streams": {"orders": {"source": {"partitions": 1}}}})


def test_defaults_that_are_not_a_mapping_or_that_name_a_stream_fail_naming_the_key(tmp_path):
    telemetry = {"telemetry": SHIPPED["telemetry"]}
    with pytest.raises(StreamConfigError, match=r"streams\.yaml: defaults: expected a mapping of keys, got list"):
        _load(tmp_path, {"defaults": ["retention"], "streams": telemetry})
    with pytest.raises(StreamConfigError, match=r"streams\.telemetry\.name \(from defaults\.name\): unknown key"):
        _load(tmp_path, {"defaults": {"name": "x"}, "streams": telemetry})


def test_no_defaults_or_empty_defaults_change_nothing(tmp_path):
    plain = _load(tmp_path, {"streams": SHIPPED})
    assert _load(tmp_path, {"defaults": None, "streams": SHIPPED}) == plain
    assert _load(tmp_path, {"defaults": {}, "streams": SHIPPED}) == plain


def test_inheriting_leaves_the_read_document_as_it_was():
    document = {"defaults": {"persist": {"schedule": "@hourly"}}, "streams": {"a": {"persist": {}}, "b": None}}
    before = copy.deepcopy(document)
    inherited = inherit_defaults(document)
    assert document == before
    assert inherited.document == {
        "streams": {"a": {"persist": {"schedule": "@hourly"}}, "b": {"persist": {"schedule": "@hourly"}}}
    }
    assert inherited.inherited_from(["streams", "a", "persist", "schedule"]) == "defaults.persist.schedule"
    assert inherited.inherited_from(["streams", "b", "persist", "schedule"]) == "defaults.persist.schedule"
    assert inherited.inherited_from(["streams", "a", "persist"]) is None  # the stream wrote it
    with pytest.raises(ConfigRuleError):
        inherit_defaults({"defaults": "x", "streams": {}})


def test_the_guides_example_loads_as_it_says(tmp_path):
    guide = (REPO / "docs" / "configuration.md").read_text()
    example = re.search(r"## Defaults: keys every stream shares.*?```yaml\n(.*?)```", guide, re.DOTALL).group(1)
    path = tmp_path / "streams.yaml"
    path.write_text(example)
    streams = load_streams(path, {**ENV, "TIDEMARK_KAFKA_BOOTSTRAP": "127.0.0.1:9092"})
    assert [(s.source.topic, s.source.partitions, s.persist.schedule) for s in streams.values()] == [
        ("orders.eu", 12, "*/5 * * * *"),
        ("orders.us", 24, "*/5 * * * *"),
    ]
    assert streams["orders_us"].persist.max_records_per_batch == 50_000
    assert streams["orders_eu"].persist.max_records_per_batch != 50_000


def test_a_credential_in_defaults_is_refused_as_in_a_stream_naming_the_default_and_never_shown(tmp_path):
    defaults = {"source": {"sasl.password": "hunter2-secret"}}
    with pytest.raises(StreamConfigError) as error:
        _load(tmp_path, {"defaults": defaults, "streams": {"telemetry": SHIPPED["telemetry"]}})
    message = str(error.value)
    assert "streams.telemetry.source.sasl.password (from defaults.source.sasl.password): security settings" in message
    assert "hunter2" not in message
