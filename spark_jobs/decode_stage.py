"""The decode stage of the persist job: raw log rows in, the same rows plus decoded columns out.

Runs tidemark.record_decoder.RecordDecoder over Arrow batches (``DataFrame.mapInArrow``), so the
quarantine rules live once, in the core, and are unit-tested without Spark. Range rows pass
through untouched (their decoded columns are null).

It also says which G each record is routed under (``routed_under_ms``): live's, for an offset a
live ledger row covered (tidemark.live_routing, given to backfill and recovery), else the G of
the aligned step the record was planned in. A lookup per record here costs the same for one
routed range or thousands, where a column expression would grow with them.

The raw value of a valid record is dropped here (null): the events table does not keep it, and
the batch is cached after this stage, so a cached batch holds decoded columns, not raw bytes.
Only a rejected record keeps its value, for quarantine.
"""

from __future__ import annotations

from typing import Callable, Iterator

from tidemark.live_routing import LiveRouting
from tidemark.planned_range import RAW_RECORD_SCHEMA, RECORD_ROW
from tidemark.record_decoder import Rejection, RecordDecoder
from tidemark.stream_config import StreamConfig
from tidemark.table_schemas import ddl

_ARROW_TYPES = {"string": "string", "double": "float64", "long": "int64", "int": "int32", "boolean": "bool_"}
_SQL_TYPES = {"string": "STRING", "double": "DOUBLE", "long": "BIGINT", "int": "INT", "boolean": "BOOLEAN"}


def decoded_schema(stream: StreamConfig) -> str:
    """DDL of the decode stage's output: the raw columns, then routed_under_ms, event_time_ms,
    reject_reason, reject_detail and one column per payload field."""
    decoded = [("routed_under_ms", "BIGINT"), ("event_time_ms", "BIGINT"), ("reject_reason", "STRING"), ("reject_detail", "STRING")]
    decoded += [(field.name, _SQL_TYPES[field.type]) for field in stream.payload.fields]
    return f"{RAW_RECORD_SCHEMA}, {ddl(decoded)}"


def decode_function(stream: StreamConfig, routing: LiveRouting | None = None) -> Callable[[Iterator], Iterator]:
    """The function to give ``mapInArrow``; it captures only picklable configuration (and
    ``routing``, live's routed ranges of a bounded run's offsets)."""
    payload = stream.payload
    max_future_skew_ms = stream.event_time.max_future_skew_ms

    def decode_batches(batches: Iterator) -> Iterator:
        import pyarrow as pa

        decoder = RecordDecoder(payload, max_future_skew_ms)
        field_names = [field.name for field in payload.fields]
        output_types = [pa.int64(), pa.int64(), pa.string(), pa.string()] + [
            getattr(pa, _ARROW_TYPES[field.type])() for field in payload.fields
        ]
        for batch in batches:
            kinds = batch.column("row_kind").to_pylist()
            values = batch.column("value").to_pylist()
            read_times = batch.column("read_time_ms").to_pylist()
            routed_under = batch.column("global_watermark_ms").to_pylist()
            if routing is not None:
                partitions = batch.column("source_partition").to_pylist()
                offsets = batch.column("source_offset").to_pylist()
                for row, (partition, offset) in enumerate(zip(partitions, offsets)):
                    live = routing.global_watermark_at(partition, offset) if kinds[row] == RECORD_ROW else None
                    if live is not None:
                        routed_under[row] = live
            kept_values, event_times, reasons, details = [], [], [], []
            payload_columns = [[] for _ in field_names]
            for kind, value, read_time in zip(kinds, values, read_times):
                result = decoder.decode(value, read_time) if kind == RECORD_ROW else None
                if result is None or isinstance(result, Rejection):
                    kept_values.append(value)
                    event_times.append(None)
                    reasons.append(result.reason if result else None)
                    details.append(result.detail if result else None)
                    for column in payload_columns:
                        column.append(None)
                else:
                    kept_values.append(None)
                    event_times.append(result.event_time_ms)
                    reasons.append(None)
                    details.append(None)
                    for column, name in zip(payload_columns, field_names):
                        column.append(result.values[name])
            raw_columns = list(batch.columns)
            raw_columns[batch.schema.get_field_index("value")] = pa.array(kept_values, pa.binary())
            new_columns = [routed_under, event_times, reasons, details] + payload_columns
            arrays = raw_columns + [pa.array(c, t) for c, t in zip(new_columns, output_types)]
            names = list(batch.schema.names) + ["routed_under_ms", "event_time_ms", "reject_reason", "reject_detail"] + field_names
            yield pa.RecordBatch.from_arrays(arrays, names=names)

    return decode_batches
