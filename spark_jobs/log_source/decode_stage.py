"""The decode stage: raw log rows in, the same rows plus decoded columns out, inside the source.

The source (spark_jobs/kafka_source/reader.py) decodes each Arrow batch it reads before handing it to
Spark, with tidemark.record_decoder.RecordDecoder, so the quarantine rules live once, in the
core, and are unit-tested without Spark. Decoding in ``read()`` rather than in a ``mapInArrow``
stage after it saves a second trip of every record between the JVM and a Python worker, and
the Python workers of that stage (measured in benchmarks/catch_up_side_by_side.py). Range rows
pass through untouched (their decoded columns are null).

It also says which G each record is routed under (``routed_under_ms``): live's, for an offset a
live ledger row covered (tidemark.live_routing, given to backfill and recovery), else the G of
the aligned step the record was planned in. A lookup per record here costs the same for one
routed range or thousands, where a column expression would grow with them.

It routes each record (``route``: events, late or quarantine; tidemark.lateness against the
G it is routed under) and counts, per (partition, aligned step), what went where
(tidemark.step_counts): after a partition's records the source yields those counts as summary
rows, so the persist batch knows its ledger counts without a pass of its own over the records.

The raw value of a valid record is dropped here (null): the events table does not keep it, and
the persist job may cache the batch, so a cached batch holds decoded columns, not raw bytes.
Only a rejected record keeps its value, for quarantine.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from tidemark.live_routing import LiveRouting, RoutedRange
from tidemark.log_position import KAFKA_OFFSETS, PositionType, position_value
from tidemark.planned_range import RECORD_ROW, raw_record_schema
from tidemark.record_decoder import RecordDecoder, Rejection
from tidemark.step_counts import EVENTS, LATE, QUARANTINE, StepCounter
from tidemark.stream_config import PayloadSchema
from tidemark.table_schemas import ddl
from tidemark.typed_documents import TypedDocuments
from tidemark.typed_json import TypedJson

_ARROW_TYPES = {"string": "string", "double": "float64", "long": "int64", "int": "int32", "boolean": "bool_"}
_SQL_TYPES = {"string": "STRING", "double": "DOUBLE", "long": "BIGINT", "int": "INT", "boolean": "BOOLEAN"}
_DECODED_COLUMNS = (
    ("routed_under_ms", "BIGINT"),
    ("event_time_ms", "BIGINT"),
    ("route", "STRING"),
    ("reject_reason", "STRING"),
    ("reject_detail", "STRING"),
)


@dataclass(frozen=True)
class DecodeSpec:
    """What the source needs to decode and route a stream's records: the payload schema, the
    future guard and the allowed lateness (ms) and, for backfill and recovery, live's routed
    ranges of the offsets they read. Travels to the source inside its options
    (spark_jobs.kafka_source.options), encoded by msgspec like them."""

    payload: PayloadSchema
    max_future_skew_ms: int
    allowed_lateness_ms: int
    live_routing: tuple[RoutedRange, ...] = ()
    # How the log the rows come from numbers them (the connection's): the type of their position columns.
    positions: PositionType = KAFKA_OFFSETS

    def to_json(self) -> str:
        return msgspec.json.encode(self).decode()

    @classmethod
    def from_json(cls, text: str) -> DecodeSpec:
        return msgspec.json.decode(text, type=cls)

    def schema(self) -> str:
        """DDL of the decoded rows: the raw columns, then routed_under_ms, event_time_ms, route,
        reject_reason, reject_detail and one column per payload field."""
        decoded = [*_DECODED_COLUMNS, *((field.name, _SQL_TYPES[field.type]) for field in self.payload.columns)]
        return f"{raw_record_schema(self.positions)}, {ddl(decoded)}"

    def decoder(self) -> BatchDecoder:
        return BatchDecoder(self)


def payload_documents(payload: PayloadSchema, of_key: bool = False):
    """How this stream's values (``of_key``: keys) become documents: None for JSON (the
    decoder's own), else the Avro or Protobuf step with this worker's registry client (its
    schema cache lasts as long as the worker)."""
    kind = payload.key_format if of_key else payload.format
    if kind in ("json", "none"):
        return None
    from connectors.schema_registry_client import registry_client
    from tidemark.registry_access import RegistryAccess
    from tidemark.registry_framing import KEY_SCHEMA_HEADER, VALUE_SCHEMA_HEADER

    access = RegistryAccess.of(payload.registry_url, payload.registry_conn_id)  # this worker's environment
    client = registry_client(access, payload.registry_patience_ms / 1000)
    header = KEY_SCHEMA_HEADER if of_key else VALUE_SCHEMA_HEADER
    if kind == "protobuf":
        from tidemark.protobuf_documents import ProtobufDocuments

        return ProtobufDocuments(client, header)
    from tidemark.avro_documents import AvroDocuments

    followed = None
    if payload.columns_from == "follow_registry" and not of_key:  # the columns this job has, fixed at its start
        followed = frozenset([payload.event_time_field, *(field.name for field in payload.columns)])
    return AvroDocuments(client, header, followed)


class BatchDecoder:
    """Decodes Arrow batches of raw rows (RAW_RECORD_SCHEMA); one per task. ``step_counts()``:
    what the records it decoded so far held, per (partition, aligned step)."""

    def __init__(self, spec: DecodeSpec, documents=None, key_documents=None):
        """``documents``, ``key_documents``: how values and keys become documents (default:
        ``payload_documents``'s, with this worker's registry client); a test or a benchmark hands
        in steps whose writer schemas are in memory."""
        import pyarrow as pa

        payload = spec.payload
        documents = payload_documents(payload) if documents is None else documents
        key_documents = payload_documents(payload, of_key=True) if key_documents is None else key_documents
        self._decoder = RecordDecoder(payload, spec.max_future_skew_ms, documents, key_documents)
        # A registry format may find the schema's id in a header; JSON never reads them.
        self._reads_headers = payload.reads_registry
        self._reads_keys = bool(payload.key_fields)
        self._allowed_lateness_ms = spec.allowed_lateness_ms
        # The typed path of a payload's valid records: JSON's (tidemark.typed_json), or Avro's and
        # Protobuf's through the same documents step as RecordDecoder's (tidemark.typed_documents).
        # None: every record takes RecordDecoder's.
        self._typed = TypedJson.of(payload, spec.max_future_skew_ms) or TypedDocuments.of(
            payload, spec.max_future_skew_ms, documents
        )
        self._routing = LiveRouting(spec.live_routing) if spec.live_routing else None
        self._counter = StepCounter()
        self._field_names = [field.name for field in spec.payload.columns]
        self._output_types = [pa.int64(), pa.int64(), pa.string(), pa.string(), pa.string()] + [
            getattr(pa, _ARROW_TYPES[field.type])() for field in spec.payload.columns
        ]

    def step_counts(self) -> list:
        """tidemark.step_counts.StepCounts of everything decoded so far, in first-seen order."""
        return list(self._counter.counts.values())

    def decode(self, batch):
        """``batch`` with its records decoded, routed and counted. Valid records take the typed
        path where the payload has one (tidemark.typed_json, tidemark.typed_documents); every
        other record takes RecordDecoder's, which alone decides what is refused and why. Routes
        and counts are whole-batch Arrow computations, the same for both."""
        import pyarrow as pa

        kinds = batch.column("row_kind").to_pylist()
        values = batch.column("value").to_pylist()
        read_times = batch.column("read_time_ms").to_pylist()
        routed_under = batch.column("global_watermark_ms").to_pylist()
        if self._routing is not None:
            partitions = batch.column("source_partition").to_pylist()
            offsets = [position_value(offset) for offset in batch.column("source_offset").to_pylist()]
            for row, (partition, offset) in enumerate(zip(partitions, offsets)):
                live = self._routing.global_watermark_at(partition, offset) if kinds[row] == RECORD_ROW else None
                if live is not None:
                    routed_under[row] = live
        records = [kind == RECORD_ROW for kind in kinds]
        # Both passes hand a registry step the same headers, where a schema id may be.
        headers = _header_pairs(batch) if self._reads_headers else [None] * len(values)
        event_times, payload_columns = self._typed_pass(values, read_times, records, headers)
        reasons, details = self._record_pass(batch, values, read_times, records, headers, event_times, payload_columns)

        valid = pa.array([t is not None for t in event_times], pa.bool_())
        event_time_array = pa.array(event_times, pa.int64())
        routed_array = pa.array(routed_under, pa.int64())
        routes = self._routes(pa.array(records, pa.bool_()), valid, event_time_array, routed_array)
        self._count(batch, routes, event_time_array)

        raw_columns = list(batch.columns)
        kept_values = pa.compute.if_else(valid, pa.nulls(len(kinds), pa.binary()), batch.column("value"))
        raw_columns[batch.schema.get_field_index("value")] = kept_values
        decoded = [
            routed_array,
            event_time_array,
            routes,
            pa.array(reasons, pa.string()),
            pa.array(details, pa.string()),
        ]
        payload = [
            # A column of a record refused after its values were typed holds nothing of it.
            pa.compute.if_else(valid, pa.array(column, kind), pa.nulls(len(kinds), kind))
            for column, kind in zip(payload_columns, self._output_types[len(_DECODED_COLUMNS) :])
        ]
        names = list(batch.schema.names) + [name for name, _ in _DECODED_COLUMNS] + self._field_names
        return pa.RecordBatch.from_arrays(raw_columns + decoded + payload, names=names)

    def _typed_pass(self, values: list, read_times: list, records: list[bool], headers: list):
        """The event times and payload columns the typed path decided (None where it did not)."""
        count = len(values)
        if self._typed is None:
            return [None] * count, [[None] * count for _ in self._field_names]
        typed = self._typed.decode([v if r else None for v, r in zip(values, records)], read_times, headers)
        return typed.event_times, typed.columns

    def _record_pass(self, batch, values, read_times, records, headers, event_times, payload_columns):
        """RecordDecoder on every record the typed path left undecided: its event time and values
        go into ``event_times`` and ``payload_columns``; returns the reject reasons and details."""
        count = len(values)
        reasons, details = [None] * count, [None] * count
        undecided = [row for row in range(count) if records[row] and event_times[row] is None]
        if not undecided:
            return reasons, details
        keys = batch.column("record_key").to_pylist() if self._reads_keys else [None] * count
        for row in undecided:
            result = self._decoder.decode(values[row], read_times[row], headers[row], keys[row])
            if isinstance(result, Rejection):
                reasons[row], details[row] = result.reason, result.detail
                continue
            event_times[row] = result.event_time_ms
            for column, name in zip(payload_columns, self._field_names):
                column[row] = result.values[name]
        return reasons, details

    def _routes(self, records, valid, event_times, routed_under):
        """Each row's route: a refused record to quarantine, a valid one to late when its event
        time is below the G it is routed under less the allowed lateness
        (tidemark.lateness), else to events; a row that is no record has none."""
        import pyarrow as pa
        import pyarrow.compute as pc

        # event time + allowed lateness < G, not event time < G − allowed lateness: a G of
        # -2^63 (a range no watermark covered, tidemark.write_claims.NO_WATERMARK_MS) would
        # wrap around to a huge one there and make every record late. Event times are within
        # years 1970..9999 (the decoder's bounds), so the sum cannot overflow.
        late = pc.fill_null(pc.less(pc.add(event_times, self._allowed_lateness_ms), routed_under), False)
        valid_route = pc.if_else(late, pa.scalar(LATE), pa.scalar(EVENTS))
        refused_route = pc.if_else(records, pa.scalar(QUARANTINE), pa.scalar(None, pa.string()))
        return pc.if_else(valid, valid_route, refused_route)

    def _count(self, batch, routes, event_times) -> None:
        """Add the batch's records to the counts per (partition, aligned step) and route."""
        import pyarrow as pa

        table = pa.table(
            {
                "row": pa.array(range(len(routes)), pa.int64()),
                "partition": batch.column("source_partition"),
                "step": batch.column("step_id"),
                "route": routes,
                "event_time": event_times,
            }
        ).filter(routes.is_valid())
        grouped = table.group_by(["partition", "step", "route"], use_threads=False).aggregate(
            [("row", "min"), ("row", "count"), ("event_time", "min"), ("event_time", "max")]
        )
        for group in sorted(grouped.to_pylist(), key=lambda group: group["row_min"]):  # first seen first
            self._counter.add_many(
                group["partition"],
                group["step"],
                group["route"],
                group["row_count"],
                group["event_time_min"],
                group["event_time_max"],
            )


def _header_pairs(batch) -> list:
    """Each row's headers as (key, value) pairs (None for a row without)."""
    return [
        None if row is None else [(header["key"], header["value"]) for header in row]
        for row in batch.column("record_headers").to_pylist()
    ]
