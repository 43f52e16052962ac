"""tidemark-generate into a Kinesis stream on the loopback Kinesis: the records the Kafka path
writes (same JSON values, device ids as partition keys, one profile per shard), PutRecords calls
within Kinesis's limits, the records a partial failure reports sent again and none twice, and
clear errors for a stream or endpoint that is not there. Real boto3 calls, no Spark."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from generator.__main__ import main
from generator.kinesis_sink import MAX_BYTES_PER_CALL, KinesisSink
from generator.production_plan import ProductionPlan
from generator.profiles import profile_named
from stack.ports import free_port
from tidemark.event_time_text import parse_event_time
from tidemark.kinesis_access import KinesisAccess

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
END = "2026-11-25T09:00:00Z"


@pytest.fixture
def kinesis_environment(monkeypatch, loopback_kinesis):
    for name, value in {
        **loopback_kinesis.environment,
        "TIDEMARK_LAKE_ROOT": "/tmp/lake",
        "TIDEMARK_CHECKPOINT_ROOT": "/tmp/checkpoints",
    }.items():
        monkeypatch.setenv(name, value)
    return loopback_kinesis


def _conf(tmp_path: Path, stream: str, shards: int, endpoint: str = "${TIDEMARK_KINESIS_ENDPOINT}") -> Path:
    document = yaml.safe_load((REPO / "conf" / "streams.yaml").read_text())
    rides = copy.deepcopy(document["streams"]["telemetry"])
    rides["source"] = {
        "kind": "kinesis",
        "stream": stream,
        "region": "us-east-1",
        "shards": shards,
        "endpoint": endpoint,
    }
    rides["retention"] = "7d"
    path = tmp_path / "streams.yaml"
    path.write_text(yaml.safe_dump({"streams": {"rides": rides}}))
    return path


def _read_shards(client, stream: str) -> dict[str, list[tuple[str, bytes]]]:
    """Every record of every shard from its start: (partition key, data), in shard order."""
    records = {}
    for shard in client.list_shards(StreamName=stream)["Shards"]:
        iterator = client.get_shard_iterator(
            StreamName=stream, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        records[shard["ShardId"]] = []
        while iterator:
            page = client.get_records(ShardIterator=iterator, Limit=10_000)
            records[shard["ShardId"]] += [(r["PartitionKey"], r["Data"]) for r in page["Records"]]
            iterator = page.get("NextShardIterator") if page["Records"] else None
    return records


def test_a_backlog_lands_on_the_stream_as_the_kafka_path_writes_it(tmp_path, capsys, kinesis_environment):
    client = kinesis_environment.client()
    kinesis_environment.create_stream("generator-backlog", 2)
    conf = _conf(tmp_path, "generator-backlog", 2)

    code = main(
        ["--conf", str(conf), "--stream", "rides", "backlog", "--hours", "0.25", "--end", END]
        + ["--profiles", "steady,heavy", "--bad-records", "4"]
    )

    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads(captured.out)
    # Derived here from the plan's inputs: what the Kafka path would send to partitions 0 and 1.
    end_ms = parse_event_time(END)
    plan = ProductionPlan(
        profiles=(profile_named("steady"), profile_named("heavy")),
        start_ms=end_ms - 15 * 60_000,
        end_ms=end_ms,
        seed=7,
        max_disorder_ms=30_000,
        rate_scale=1.0,
        bad_records=4,
        event_time_field="event_time",
    )
    expected = {0: [], 1: []}
    for record in plan.records():
        if hasattr(record, "payload"):
            value = json.dumps(record.payload, separators=(",", ":")).encode()
            expected[record.partition].append((record.payload["device_id"], value))
        else:
            expected[record.partition].append((record.key.decode(), record.value))
    stored = _read_shards(client, "generator-backlog")
    assert sorted(stored["shardId-000000000000"]) == sorted(expected[0])
    assert sorted(stored["shardId-000000000001"]) == sorted(expected[1])
    counts = [(p["partition"], p["records"] + p["bad_records"]) for p in summary["partitions"]]
    assert counts == [(0, len(expected[0])), (1, len(expected[1]))]
    assert len(expected[0]) > 100 and len(expected[1]) > len(expected[0])  # heavy writes more than steady
    assert summary["kinesis_stream"] == "generator-backlog"
    assert summary["endpoint"] == kinesis_environment.endpoint
    assert summary["retried_records"] == 0
    assert "topic" not in summary
    assert f"to Kinesis stream 'generator-backlog' at {kinesis_environment.endpoint}" in captured.err


class _PartlyFailingClient:
    """The real client, except that the first ``failing_calls`` PutRecords calls store only their
    even-numbered records and report the odd ones throttled, as Kinesis reports a partial failure."""

    def __init__(self, client, failing_calls: int):
        self._client = client
        self._failing_calls = failing_calls
        self.batch_sizes: list[int] = []
        self.batch_bytes: list[int] = []

    def __getattr__(self, name):
        return getattr(self._client, name)

    def put_records(self, StreamName, Records):  # noqa: N803 (boto3's parameter names)
        self.batch_sizes.append(len(Records))
        self.batch_bytes.append(sum(len(r["Data"]) + len(r["PartitionKey"].encode()) for r in Records))
        if self._failing_calls <= 0:
            return self._client.put_records(StreamName=StreamName, Records=Records)
        self._failing_calls -= 1
        stored = iter(self._client.put_records(StreamName=StreamName, Records=Records[0::2])["Records"])
        throttled = {"ErrorCode": "ProvisionedThroughputExceededException", "ErrorMessage": "Rate exceeded for shard"}
        results = [next(stored) if index % 2 == 0 else throttled for index in range(len(Records))]
        return {"FailedRecordCount": len(Records) // 2, "Records": results}


def _sink(loopback_kinesis, stream: str, client, shards: int = 2) -> KinesisSink:
    source = type("Source", (), {"stream": stream, "region": loopback_kinesis.region, "endpoint": None})()
    access = KinesisAccess.from_source(source, {})
    return KinesisSink(access, shards, client=client, sleep=lambda seconds: None)


def test_the_records_a_partial_failure_reports_are_sent_again_and_none_twice(loopback_kinesis):
    loopback_kinesis.create_stream("generator-partial", 2)
    client = _PartlyFailingClient(loopback_kinesis.client(), failing_calls=2)
    sink = _sink(loopback_kinesis, "generator-partial", client)
    sent = [(f"device-{n % 7}", f'{{"n":{n}}}'.encode()) for n in range(40)]

    for n, (key, value) in enumerate(sent):
        sink.send(n % 2, key.encode(), value, 0)
    sink.close()

    stored = _read_shards(loopback_kinesis.client(), "generator-partial")
    assert sorted(stored["shardId-000000000000"]) == sorted(sent[0::2])
    assert sorted(stored["shardId-000000000001"]) == sorted(sent[1::2])
    # 40 records: call 1 stores 20 and fails 20, call 2 stores 10 of those, call 3 the other 10.
    assert client.batch_sizes == [40, 20, 10]
    assert sink.retried_records == 30


def test_a_call_holds_at_most_500_records_and_5_mib(loopback_kinesis):
    loopback_kinesis.create_stream("generator-limits", 2)
    client = _PartlyFailingClient(loopback_kinesis.client(), failing_calls=0)
    sink = _sink(loopback_kinesis, "generator-limits", client)

    for n in range(1_201):  # small records: the count limits each call
        sink.send(n % 2, b"k", b"{}", 0)
    sink.close()
    assert client.batch_sizes == [500, 500, 201]

    client.batch_sizes.clear()
    value = b"x" * 20_000  # 20,001 bytes with its one-byte key: 262 of them fit in 5 MiB
    for n in range(600):
        sink.send(n % 2, b"k", value, 0)
    sink.close()
    per_call = MAX_BYTES_PER_CALL // 20_001
    assert client.batch_sizes == [per_call, per_call, 600 - 2 * per_call]
    assert max(client.batch_bytes) <= MAX_BYTES_PER_CALL


def test_a_stream_that_does_not_exist_fails_naming_it_the_endpoint_and_how_to_create_it(
    tmp_path, capsys, kinesis_environment
):
    conf = _conf(tmp_path, "generator-missing", 4)

    code = main(["--conf", str(conf), "--stream", "rides", "backlog", "--hours", "0.1", "--end", END])

    error = " ".join(capsys.readouterr().err.split())
    assert code == 1
    assert (
        f"error: Kinesis stream 'generator-missing' does not exist at endpoint {kinesis_environment.endpoint} "
        "(region us-east-1): create it with `tidemark create-kinesis-stream generator-missing --shards 4` (loopback), "
        "or check source.stream and source.region"
    ) in error


def test_an_endpoint_that_does_not_answer_fails_naming_it(tmp_path, capsys, kinesis_environment):
    endpoint = f"http://127.0.0.1:{free_port()}"
    conf = _conf(tmp_path, "generator-nowhere", 2, endpoint=endpoint)

    code = main(["--conf", str(conf), "--stream", "rides", "backlog", "--hours", "0.1", "--end", END])

    error = " ".join(capsys.readouterr().err.split())
    assert code == 1
    assert (
        f"error: Kinesis at endpoint {endpoint} (region us-east-1) does not answer for stream 'generator-nowhere'"
        in error
    )
    assert "`tidemark up kinesis`" in error


def test_too_few_open_shards_for_the_profiles_fails_before_anything_is_sent(tmp_path, capsys, kinesis_environment):
    kinesis_environment.create_stream("generator-small", 1)
    conf = _conf(tmp_path, "generator-small", 1)

    code = main(
        [
            "--conf",
            str(conf),
            "--stream",
            "rides",
            "backlog",
            "--hours",
            "0.1",
            "--end",
            END,
            "--profiles",
            "steady,heavy",
        ]
    )

    assert code == 1
    assert "has 1 open shards but 2 are needed" in capsys.readouterr().err
    assert _read_shards(kinesis_environment.client(), "generator-small") == {"shardId-000000000000": []}


@pytest.mark.parametrize("flag", [["--topic", "x"], ["--bootstrap", "127.0.0.1:1"]])
def test_a_kafka_flag_on_a_kinesis_stream_is_a_usage_error(tmp_path, capsys, kinesis_environment, flag):
    conf = _conf(tmp_path, "generator-flags", 2)

    with pytest.raises(SystemExit) as exit_info:
        main(["--conf", str(conf), "--stream", "rides", *flag, "backlog", "--hours", "0.1", "--end", END])

    assert exit_info.value.code == 2
    assert f"argument {flag[0]}: stream 'rides' is read from kinesis (source.kind), not this" in capsys.readouterr().err


def test_a_kinesis_flag_on_a_kafka_stream_is_a_usage_error(capsys, monkeypatch):
    monkeypatch.setenv("TIDEMARK_LAKE_ROOT", "/tmp/lake")
    monkeypatch.setenv("TIDEMARK_CHECKPOINT_ROOT", "/tmp/checkpoints")
    conf = REPO / "conf" / "streams.yaml"

    with pytest.raises(SystemExit) as exit_info:
        main(["--conf", str(conf), "--kinesis-stream", "rides", "backlog", "--hours", "0.1", "--end", END])

    assert exit_info.value.code == 2
    assert "argument --kinesis-stream: stream 'telemetry' is read from kafka (source.kind), not this" in (
        capsys.readouterr().err
    )
