"""The decode stage the source runs in read(): decoded columns, the G each record is routed
under, and raw bytes kept only for what goes to quarantine. Arrow only, no Spark."""

from __future__ import annotations

import json
import re

import pyarrow as pa

from spark_jobs.log_source.decode_stage import DecodeSpec
from tidemark.live_routing import RoutedRange
from tidemark.planned_range import RANGE_ROW, RECORD_ROW
from tidemark.step_counts import StepCounts
from tidemark.stream_config import PayloadField, PayloadSchema

PAYLOAD = PayloadSchema("event_time", "iso8601", (PayloadField("device_id", "string", True),), 65_536)
NOW = 1_763_800_000_000
STEP_G = NOW - 3_600_000
LIVE_G = NOW - 7_200_000


def _raw(rows):
    """Raw rows as the Kafka source yields them (its Arrow schema); a column a row lacks is null."""
    from spark_jobs.log_source.rows import arrow_schema
    from tidemark.log_position import KAFKA_OFFSETS

    schema = arrow_schema(pa, KAFKA_OFFSETS)
    return pa.RecordBatch.from_pylist([{f.name: r.get(f.name) for f in schema} for r in rows], schema=schema)


def _record(offset, value):
    return {
        "row_kind": RECORD_ROW,
        "source_partition": 1,
        "source_offset": offset,
        "value": value,
        "read_time_ms": NOW,
        "step_id": 7,
        "global_watermark_ms": STEP_G,
    }


def test_records_are_decoded_routed_under_their_step_or_live_and_only_rejects_keep_their_bytes():
    spec = DecodeSpec(PAYLOAD, 300_000, 600_000, (RoutedRange(1, 10, 11, LIVE_G),))
    spec = DecodeSpec.from_json(spec.to_json())  # as the tasks receive it
    good = json.dumps({"event_time": "2025-11-22T08:00:00Z", "device_id": "d1"}).encode()
    batch = _raw(
        [
            {"row_kind": RANGE_ROW, "source_partition": 1, "planned_range": "{}"},
            _record(10, good),
            _record(11, good),
            _record(12, b"{not json"),
        ]
    )

    decoded = spec.decoder().decode(batch).to_pylist()

    range_row, live_covered, own_step, rejected = decoded
    assert (
        range_row["planned_range"] == "{}" and range_row["event_time_ms"] is None and range_row["reject_reason"] is None
    )
    assert live_covered["routed_under_ms"] == LIVE_G, "an offset live covered keeps live's G"
    assert own_step["routed_under_ms"] == STEP_G, "else the G of the step it was planned in"
    assert own_step["device_id"] == "d1" and own_step["event_time_ms"] == 1_763_798_400_000
    assert own_step["value"] is None, "a valid record's raw bytes are not carried into the cached batch"
    assert rejected["reject_reason"] == "malformed_json" and rejected["value"] == b"{not json"
    top_level = [c.split()[0] for c in re.split(r",\s*(?![^<]*>)", spec.schema())]  # no split inside STRUCT<...>
    assert top_level == list(decoded[0]), "the schema names every column it yields, in order"


def test_each_record_is_routed_and_counted_per_partition_and_step():
    spec = DecodeSpec.from_json(DecodeSpec(PAYLOAD, 300_000, 600_000).to_json())
    decoder = spec.decoder()

    def record(offset, event_time, step):
        value = json.dumps({"event_time": event_time, "device_id": "d1"}).encode()
        return {**_record(offset, value), "step_id": step}

    # STEP_G is 2025-11-22T07:26:40Z: with 10 minutes of allowed lateness, before 07:16:40 is late.
    first = _raw([record(1, "2025-11-22T07:30:00Z", 7), record(2, "2025-11-22T07:20:00Z", 7)])
    second = _raw([record(3, "2025-11-22T07:00:00Z", 7), _record(4, b"\xff"), record(5, "2025-11-22T08:00:00Z", 8)])

    routes = [row["route"] for batch in (first, second) for row in decoder.decode(batch).to_pylist()]
    counts = {(c.partition, c.seq): c for c in decoder.step_counts()}

    assert routes == ["events", "events", "late", "quarantine", "events"], "within the allowed lateness is on time"
    assert set(counts) == {(1, 7), (1, 8)}, "one count per partition and step, over every batch decoded"
    step = counts[(1, 7)]
    assert (step.records, step.late, step.quarantined, step.data_records) == (2, 1, 1, 4)
    assert (step.min_event_time_ms, step.max_event_time_ms) == (1_763_794_800_000, 1_763_796_600_000), (
        "07:00 and 07:30: a late record's event time counts, a reject has none"
    )
    assert StepCounts.from_text(step.to_text()) == step, "travels as the summary row's text"


def test_the_typed_path_changes_no_row_and_no_count():
    """The same mixed batch through the typed path and through RecordDecoder alone: the same
    rows, the same counts (tidemark.typed_json only makes a valid JSON record cheaper)."""
    payload = PayloadSchema(
        "event_time",
        "iso8601",
        (PayloadField("device_id", "string", True), PayloadField("battery", "int", False)),
        65_536,
    )

    def value(event_time, **fields):
        return json.dumps({"event_time": event_time, "device_id": "d1", **fields}).encode()

    rows = [
        {"row_kind": RANGE_ROW, "source_partition": 1, "planned_range": "{}"},
        _record(1, value("2025-11-22T07:30:00Z", battery=3)),
        _record(2, value("2025-11-22T07:00:00Z")),  # late
        _record(3, value("2025-11-22T07:30:00Z", battery=87.0)),  # the decoder's: an int written as 87.0
        _record(4, value("2025-11-22T07:30:00Z", battery="x")),  # refused
        _record(5, b"\xff"),
        _record(6, None),
        {**_record(7, value("2025-11-22T07:40:00Z")), "step_id": 8},
    ]
    spec = DecodeSpec(payload, 300_000, 600_000, (RoutedRange(1, 2, 3, LIVE_G),))
    typed, plain = spec.decoder(), spec.decoder()
    plain._typed = None  # every record through RecordDecoder

    assert typed.decode(_raw(rows)).to_pylist() == plain.decode(_raw(rows)).to_pylist()
    assert typed.step_counts() == plain.step_counts()
    assert [c.data_records for c in typed.step_counts()] == [6, 1]


def test_a_record_routed_under_no_watermark_is_never_late():
    """A range no watermark covered is routed under NO_WATERMARK_MS (-2^63): every record of it
    is on time, as tidemark.lateness says, on both paths (G minus the allowed lateness would
    wrap around to a huge G in Arrow's int64 and send them all to late)."""
    from tidemark.write_claims import NO_WATERMARK_MS

    spec = DecodeSpec(PAYLOAD, 300_000, 600_000, (RoutedRange(1, 0, 10, NO_WATERMARK_MS),))
    value = json.dumps({"event_time": "2025-11-22T07:30:00Z", "device_id": "d1"}).encode()
    rows = [_record(0, value), {**_record(1, value), "global_watermark_ms": NO_WATERMARK_MS}]
    typed, plain = spec.decoder(), spec.decoder()
    plain._typed = None

    for decoder in (typed, plain):
        decoded = decoder.decode(_raw(rows)).to_pylist()
        assert [row["route"] for row in decoded] == ["events", "events"]
        assert [row["routed_under_ms"] for row in decoded] == [NO_WATERMARK_MS, NO_WATERMARK_MS]
