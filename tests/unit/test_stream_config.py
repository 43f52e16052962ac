"""The stream configuration loader: the shipped file is valid; every bad value fails naming its key."""

from pathlib import Path

import pytest
import yaml

from tidemark.stream_config import StreamConfigError, load_stream, load_streams

REPO = Path(__file__).resolve().parents[2]
ENV = {"TIDEMARK_LAKE_ROOT": "/lake", "TIDEMARK_CHECKPOINT_ROOT": "/checkpoints"}


def _shipped() -> dict:
    return yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())


def _load(tmp_path, document, environ=ENV):
    path = tmp_path / "streams.yaml"
    path.write_text(yaml.safe_dump(document))
    return load_streams(path, environ)


def test_shipped_configuration_is_valid_and_typed():
    stream = load_stream(REPO / "conf" / "streams.yaml", "telemetry", ENV)
    assert stream.source.topic == "telemetry"
    assert stream.source.partitions == 4
    assert stream.source.bootstrap_servers == "127.0.0.1:19092"
    assert stream.event_time.max_out_of_orderness_ms == 30_000
    assert stream.event_time.allowed_lateness_ms == 600_000
    assert stream.retention_ms == 7 * 86_400_000
    assert stream.source.open_transaction_timeout_ms == 15 * 60_000
    assert [f.name for f in stream.payload.fields] == ["device_id", "lat", "lon", "battery"]
    assert stream.table_path("events") == "/lake/telemetry/events"
    assert stream.checkpoint_path("persist") == "/checkpoints/telemetry/persist"


def test_environment_overrides_the_default(tmp_path):
    streams = _load(tmp_path, _shipped(), {**ENV, "TIDEMARK_KAFKA_BOOTSTRAP": "kafka:9092"})
    assert streams["telemetry"].source.bootstrap_servers == "kafka:9092"


def test_missing_required_environment_variable_names_key_and_variable(tmp_path):
    with pytest.raises(
        StreamConfigError, match=r"streams\.(telemetry|rides)\.lake\.root: environment variable TIDEMARK_LAKE_ROOT"
    ):
        _load(tmp_path, _shipped(), {"TIDEMARK_CHECKPOINT_ROOT": "/c"})


@pytest.mark.parametrize(
    "section, key, value, message",
    [
        (
            "event_time",
            "max_out_of_orderness",
            "-5s",
            r"event_time\.max_out_of_orderness: expected a non-negative duration",
        ),
        ("event_time", "allowed_lateness", "10", r"event_time\.allowed_lateness: a bare number is ambiguous"),
        (
            "event_time",
            "allowed_lateness",
            "8d",
            r"event_time\.allowed_lateness: 8d is not shorter than the log retention 7d",
        ),
        ("event_time", "idle_timeout", "0s", r"event_time\.idle_timeout: must be greater than zero"),
        ("event_time", "max_drfit", "5m", r"event_time\.max_drfit: unknown key"),
        ("event_time", "max_drift", "30s", r"event_time\.max_drift: 30s must be larger than max_out_of_orderness 30s"),
        ("source", "partitions", 0, r"source\.partitions: expected a whole number >= 1"),
        ("source", "starting_offsets", "newest", r"source\.starting_offsets: expected one of earliest, latest"),
        ("source", "open_transaction_timeout", "0s", r"source\.open_transaction_timeout: must be greater than zero"),
        ("source", "open_transaction_timeout", "soon", r"source\.open_transaction_timeout: "),
        ("persist", "mode", "streaming", r"persist\.mode: expected one of available_now, continuous"),
        ("source", "max_partitions", 0, r"source\.max_partitions: expected a whole number >= 1"),
        (
            "source",
            "max_partitions",
            2,
            r"source\.max_partitions: 2 is below the topic's 4 partitions .*suggested: 1024",
        ),
        (
            "source",
            "read_tasks",
            0,
            r"source\.read_tasks: 0 read tasks cannot read anything; suggested: leave it unset",
        ),
        ("source", "read_tasks", -3, r"source\.read_tasks: expected a whole number >= 0"),
        ("source", "read_tasks", 5000, r"source\.read_tasks: 5000 read tasks cannot all be used .*at most 2048"),
    ],
)
def test_bad_value_fails_naming_the_key(tmp_path, section, key, value, message):
    document = _shipped()
    document["streams"]["telemetry"][section][key] = value
    with pytest.raises(StreamConfigError, match=message):
        _load(tmp_path, document)


def test_missing_section_and_bad_field_type(tmp_path):
    document = _shipped()
    del document["streams"]["telemetry"]["event_time"]
    with pytest.raises(StreamConfigError, match=r"streams\.telemetry\.event_time: missing required section"):
        _load(tmp_path, document)
    document = _shipped()
    document["streams"]["telemetry"]["payload"]["fields"]["battery"]["type"] = "float"
    with pytest.raises(
        StreamConfigError,
        match=r"payload\.fields\.battery\.type: expected one of boolean, double, int, long, string, got 'float'",
    ):
        _load(tmp_path, document)


def test_payload_field_may_not_shadow_tidemark_columns(tmp_path):
    document = _shipped()
    document["streams"]["telemetry"]["payload"]["fields"]["source_offset"] = {"type": "long"}
    with pytest.raises(StreamConfigError, match="source_offset.*column tidemark adds itself"):
        _load(tmp_path, document)


def test_a_registry_format_needs_a_registry_and_a_field_path_is_names_joined_by_dots(tmp_path):
    document = _shipped()
    payload = document["streams"]["telemetry"]["payload"]
    payload["format"] = "protobuf"
    with pytest.raises(StreamConfigError, match=r"payload\.registry_url: format protobuf reads each record's writer"):
        _load(tmp_path, document)
    payload["registry_url"] = "http://127.0.0.1:19480/apis/ccompat/v7"
    payload["fields"]["site"] = {"type": "string", "path": "place.site"}
    assert _load(tmp_path, document)["telemetry"].payload.fields[-1].path == "place.site"
    payload["fields"]["site"]["path"] = "place..site"
    with pytest.raises(StreamConfigError, match=r"payload\.fields\.site\.path: 'place\.\.site' is not names joined"):
        _load(tmp_path, document)


def test_key_fields_need_a_key_format_and_their_own_names(tmp_path):
    document = _shipped()
    payload = document["streams"]["telemetry"]["payload"]
    payload["key_fields"] = {"tenant": {"type": "string"}}
    with pytest.raises(StreamConfigError, match=r"payload\.key_fields: the key is not decoded: set key_format"):
        _load(tmp_path, document)
    payload["key_format"] = "avro"
    with pytest.raises(StreamConfigError, match=r"payload\.registry_url: key_format avro reads"):
        _load(tmp_path, document)
    payload["registry_url"] = "http://127.0.0.1:19480/apis/ccompat/v7"
    stream = _load(tmp_path, document)["telemetry"]
    assert [f.name for f in stream.payload.columns][-1] == "tenant" and stream.payload.reads_registry
    payload["key_fields"] = {"device_id": {"type": "string"}}
    with pytest.raises(
        StreamConfigError, match=r"payload\.key_fields\.device_id: a column of that name comes from the value"
    ):
        _load(tmp_path, document)


def test_unknown_stream_lists_the_configured_ones():
    with pytest.raises(StreamConfigError, match="no stream named 'clicks'; configured streams: rides, telemetry"):
        load_stream(REPO / "conf" / "streams.yaml", "clicks", ENV)


def test_missing_file_and_invalid_yaml(tmp_path):
    with pytest.raises(StreamConfigError, match="not found"):
        load_streams(tmp_path / "absent.yaml", ENV)
    broken = tmp_path / "broken.yaml"
    broken.write_text("streams: [unclosed")
    with pytest.raises(StreamConfigError, match="not valid YAML"):
        load_streams(broken, ENV)


def test_partition_limit_and_read_tasks_default_and_can_be_set(tmp_path):
    stream = load_stream(REPO / "conf" / "streams.yaml", "telemetry", ENV)
    assert stream.source.max_partitions == 2048
    assert stream.source.read_tasks is None, "unset: the cluster's parallelism"
    document = _shipped()
    document["streams"]["telemetry"]["source"].update(max_partitions=4096, read_tasks=8)
    stream = _load(tmp_path, document)["telemetry"]
    assert (stream.source.max_partitions, stream.source.read_tasks) == (4096, 8)


def test_the_contract_crosses_a_process_boundary_as_one_json_value():
    import msgspec

    from tidemark.stream_config import StreamConfig

    stream = load_stream(REPO / "conf" / "streams.yaml", "telemetry", ENV)
    sent = msgspec.json.encode(stream)
    assert b'"idle_timeout":300000' in sent, "durations travel as milliseconds under the file's key"
    assert msgspec.json.decode(sent, type=StreamConfig) == stream


def test_the_source_says_its_kind(tmp_path):
    document = _shipped()
    del document["streams"]["telemetry"]["source"]["kind"]
    with pytest.raises(
        StreamConfigError,
        match=r"streams\.telemetry\.source\.kind: missing required key; expected one of kafka, kinesis$",
    ):
        _load(tmp_path, document)
    document["streams"]["telemetry"]["source"]["kind"] = "kafak"
    with pytest.raises(
        StreamConfigError, match=r"streams\.telemetry\.source\.kind: expected one of kafka, kinesis, got 'kafak'$"
    ):
        _load(tmp_path, document)


def test_an_empty_key_is_unset_and_an_empty_stream_names_its_first_missing_section(tmp_path):
    document = _shipped()
    document["streams"]["telemetry"]["source"]["read_tasks"] = None
    assert _load(tmp_path, document)["telemetry"].source.read_tasks is None
    document["streams"]["clicks"] = None
    with pytest.raises(StreamConfigError, match=r"streams\.clicks\.source: missing required section"):
        _load(tmp_path, document)


def test_the_memory_arithmetic_does_not_import_the_configuration():
    """The configuration calls the arithmetic; the arithmetic names what it reads as Protocols
    (not even a TYPE_CHECKING import back, which made the two a circle)."""
    import ast

    tree = ast.parse((REPO / "tidemark" / "batch_memory.py").read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert not {name for name in imported if name.startswith("tidemark.")}, imported
